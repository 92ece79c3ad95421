package scheduler

import (
	"reflect"
	"testing"
)

// FuzzParseJobs: any jobs file either fails with ErrInvalidJob or yields
// jobs that validate and survive the stored JSON form unchanged.
func FuzzParseJobs(f *testing.F) {
	for _, s := range []string{
		"jobs:\n- {name: a, schedule: '@daily', command: 'true'}\n",
		"jobs:\n- name: b\n  schedule: 'CRON_TZ=Asia/Shanghai */5 * * * * *'\n  command: sh\n  args: [-c, x]\n  timeout: 1m\n  retries: 2\n  concurrencyPolicy: forbid\n",
		"jobs:\n- {name: c, schedule: '@every 90s', func: f, startingDeadline: 1h, historyLimit: 3}\n",
		"jobs: [{name: '', schedule: ''}]",
		"jobs: 7",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := ParseJobs(data)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if err := j.Validate(); err != nil {
				t.Fatalf("parsed job %+v does not validate: %v", j, err)
			}
			back, err := DecodeJob(j.Encode())
			if err != nil {
				t.Fatalf("job %+v: stored form does not decode: %v", j, err)
			}
			j.Version = 1
			// Empty lists and maps are omitted from the JSON: nil after.
			if len(j.Args) == 0 {
				j.Args = nil
			}
			if len(j.Env) == 0 {
				j.Env = nil
			}
			if !reflect.DeepEqual(back, j) {
				t.Fatalf("job changed through its stored form:\n%+v\n%+v", j, back)
			}
		}
	})
}
