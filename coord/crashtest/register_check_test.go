package crashtest

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestRegisterModel checks the linearizability test's model on small
// histories, so that a model too lenient to catch a lost or stale write
// cannot pass unnoticed.
func TestRegisterModel(t *testing.T) {
	const never = 1 << 40 // the return time of an unknown outcome
	get := func(client int, call, ret int64, value string, version int32) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{kind: regGet, key: "k"}, Call: call,
			Output: regOutput{value: value, version: version}, Return: ret}
	}
	set := func(client int, call, ret int64, value string, newVersion int32) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{kind: regSet, key: "k", value: value}, Call: call,
			Output: regOutput{version: newVersion}, Return: ret}
	}
	cas := func(client int, call, ret int64, value string, expect int32, out regOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{kind: regCAS, key: "k", value: value, version: expect}, Call: call,
			Output: out, Return: ret}
	}
	unknownSet := func(client int, call int64, value string) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: regInput{kind: regSet, key: "k", value: value}, Call: call,
			Output: regOutput{unknown: true}, Return: never}
	}
	tests := []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"read your write", []porcupine.Operation{set(0, 0, 1, "a", 1), get(1, 2, 3, "a", 1)}, true},
		{"stale read after an acknowledged set", []porcupine.Operation{set(0, 0, 1, "a", 1), get(1, 2, 3, "init", 0)}, false},
		{"acknowledged set lost: version goes back", []porcupine.Operation{
			set(0, 0, 1, "a", 1), get(1, 2, 3, "a", 1), set(0, 4, 5, "b", 2), get(1, 6, 7, "a", 1)}, false},
		{"set reports a version that skips one", []porcupine.Operation{set(0, 0, 1, "a", 2)}, false},
		{"concurrent get sees the old value", []porcupine.Operation{set(0, 0, 10, "a", 1), get(1, 2, 3, "init", 0)}, true},
		{"concurrent get sees the new value", []porcupine.Operation{set(0, 0, 10, "a", 1), get(1, 2, 3, "a", 1)}, true},
		{"unknown set seen later", []porcupine.Operation{unknownSet(0, 0, "a"), get(1, 5, 6, "a", 1)}, true},
		{"unknown set never seen", []porcupine.Operation{unknownSet(0, 0, "a"), get(1, 5, 6, "init", 0)}, true},
		{"unknown set seen then undone", []porcupine.Operation{
			unknownSet(0, 0, "a"), get(1, 5, 6, "a", 1), get(1, 7, 8, "init", 0)}, false},
		{"cas on the current version", []porcupine.Operation{
			cas(0, 0, 1, "a", 0, regOutput{version: 1}), get(1, 2, 3, "a", 1)}, true},
		{"cas on a stale version refused", []porcupine.Operation{
			set(0, 0, 1, "a", 1), cas(1, 2, 3, "b", 0, regOutput{badVersion: true}), get(1, 4, 5, "a", 1)}, true},
		{"cas on a stale version applied", []porcupine.Operation{
			set(0, 0, 1, "a", 1), cas(1, 2, 3, "b", 0, regOutput{version: 2})}, false},
		{"cas on the current version refused", []porcupine.Operation{
			cas(0, 0, 1, "a", 0, regOutput{badVersion: true})}, false},
		{"two cas on one version both applied", []porcupine.Operation{
			cas(0, 0, 10, "a", 0, regOutput{version: 1}), cas(1, 0, 10, "b", 0, regOutput{version: 1})}, false},
		{"unknown cas applied once", []porcupine.Operation{
			{ClientId: 0, Input: regInput{kind: regCAS, key: "k", value: "a", version: 0}, Call: 0, Output: regOutput{unknown: true}, Return: never},
			get(1, 5, 6, "a", 1)}, true},
		{"a server error on a get", []porcupine.Operation{
			{ClientId: 0, Input: regInput{kind: regGet, key: "k"}, Call: 0, Output: regOutput{err: "zk: node does not exist"}, Return: 1}}, false},
		{"keys are independent", []porcupine.Operation{
			set(0, 0, 1, "a", 1),
			{ClientId: 1, Input: regInput{kind: regGet, key: "other"}, Call: 2, Output: regOutput{value: "init"}, Return: 3}}, true},
	}
	model := registerModel("init")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(model, tc.history); got != tc.want {
				t.Errorf("linearizable = %v, want %v for %v", got, tc.want, describeHistory(tc.history))
			}
		})
	}
}

func describeHistory(h []porcupine.Operation) []string {
	var out []string
	for _, op := range h {
		out = append(out, describeRegOp(op.Input.(regInput), op.Output.(regOutput)))
	}
	return out
}
