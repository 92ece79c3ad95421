package bench

import (
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{Addr: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Clients != DefaultClients || o.InFlight != DefaultInFlight || o.Duration != DefaultDuration ||
		o.ValueBytes != DefaultValueBytes || o.Watchers != DefaultWatchers || o.Warmup != DefaultWarmup || o.Logger == nil {
		t.Errorf("withDefaults() = %+v, want every zero field defaulted", o)
	}
	set := Options{Clients: 3, InFlight: 2, Duration: time.Second, ValueBytes: 10, Watchers: 7, Warmup: -1}
	got, err := set.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.Clients != 3 || got.InFlight != 2 || got.Duration != time.Second || got.ValueBytes != 10 ||
		got.Watchers != 7 || got.Warmup != -1 {
		t.Errorf("withDefaults() changed fields that were set: %+v", got)
	}
}
