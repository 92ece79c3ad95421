package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// Job dependencies (Job.After): a run of a job waits for the runs of the
// same run key of the jobs it names. This file holds the checks of one
// job's After, the cycle check over a set of jobs (a jobs file, the
// stored jobs with a new one, what a scheduler fires) and the graph
// `ctl job graph` prints. All of it is pure.

// UpstreamEnvPrefix starts the environment variables that carry an
// upstream run's outcome to a job's command (UpstreamEnv).
const UpstreamEnvPrefix = "SHEPHERD_UPSTREAM_"

// UpstreamEnv is the environment variable that carries the result data
// of the upstream job's run to a command: UpstreamEnvPrefix and the job
// name in upper case, every character other than a letter or digit
// replaced by '_' (extract-eu.v2: SHEPHERD_UPSTREAM_EXTRACT_EU_V2). The
// same name with the suffix _FILE names a file holding the data, with
// _STATUS the run's status.
func UpstreamEnv(job string) string {
	return UpstreamEnvPrefix + strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z':
			return c - 'a' + 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			return c
		}
		return '_'
	}, job)
}

// upstreamEnvNames are the variables UpstreamEnv(job) sets.
func upstreamEnvNames(job string) [3]string {
	v := UpstreamEnv(job)
	return [3]string{v, v + "_FILE", v + "_STATUS"}
}

// checkAfter checks one job's After and WhenUpstream; the error names the
// field.
func checkAfter(j Job) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: job %q: %s: %s", ErrInvalidJob, j.Name, field, fmt.Sprintf(format, args...))
	}
	switch j.WhenUpstream {
	case "", UpstreamSucceeded, UpstreamFailed, UpstreamAny:
	default:
		return bad("whenUpstream", "%q: want succeeded, failed or any", j.WhenUpstream)
	}
	if j.WhenUpstream != "" && len(j.After) == 0 {
		return bad("whenUpstream", "set without after: it says how the upstream runs must have ended")
	}
	if len(j.After) > MaxUpstream {
		return bad("after", "%d jobs: at most %d", len(j.After), MaxUpstream)
	}
	env := map[string]string{} // variable -> upstream job
	tasks := map[string]bool{}
	for i, d := range j.After {
		field := fmt.Sprintf("after[%d].job", i)
		if d.Task != "" || d.CaughtUpTo != "" {
			field = fmt.Sprintf("after[%d].task", i)
			switch {
			case d.Job != "":
				return bad(field, "give job or task, not both")
			case d.Task == "":
				return bad(field, "missing: caughtUpTo names the time a replication task's target must be fresh to")
			case !namePattern.MatchString(d.Task) || d.Task == "." || d.Task == "..":
				return bad(field, "%q: want 1-128 letters, digits, '.', '_' or '-', not starting with '.' or '-'", d.Task)
			case tasks[d.Task]:
				return bad(field, "%q is listed twice", d.Task)
			}
			if _, err := ParseCaughtUpTo(d.CaughtUpTo); err != nil {
				return bad(fmt.Sprintf("after[%d].caughtUpTo", i), "%v", err)
			}
			tasks[d.Task] = true
			continue
		}
		switch {
		case d.Job == "":
			return bad(field, "missing: name the upstream job, or a replication task with task and caughtUpTo")
		case !namePattern.MatchString(d.Job) || d.Job == "." || d.Job == "..":
			return bad(field, "%q: want 1-128 letters, digits, '.', '_' or '-', not starting with '.' or '-'", d.Job)
		case d.Job == j.Name:
			return bad(field, "a job cannot wait for itself")
		}
		for _, v := range upstreamEnvNames(d.Job) {
			if other, ok := env[v]; ok {
				if other == d.Job {
					return bad(field, "%q is listed twice", d.Job)
				}
				return bad(field, "%q and %q both give the variable %s: rename one of the jobs", other, d.Job, v)
			}
			env[v] = d.Job
		}
	}
	return nil
}

// upstreamOf maps each job to the jobs it waits for.
func upstreamOf(jobs []Job) map[string][]string {
	g := map[string][]string{}
	for _, j := range jobs {
		for _, u := range j.upstreamJobs() {
			if !slices.Contains(g[j.Name], u) {
				g[j.Name] = append(g[j.Name], u)
			}
		}
	}
	return g
}

// cycleThrough returns a cycle of g that goes through start, as the list
// of jobs from start back to start (each waits for the next), or nil.
// Cycles elsewhere in g are not its business: it ends on them.
func cycleThrough(g map[string][]string, start string) []string {
	parent := map[string]string{}
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, u := range g[n] {
			if u == start {
				path := []string{start}
				for c := n; c != start; c = parent[c] {
					path = append(path, c)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if !seen[u] {
				seen[u], parent[u] = true, n
				queue = append(queue, u)
			}
		}
	}
	return nil
}

// cycleError words a cycle for the job it was found from.
func cycleError(cycle []string) error {
	return fmt.Errorf("%w: job %q: after: cycle %s (each waits for the next): remove one of these dependencies",
		ErrInvalidJob, cycle[0], strings.Join(cycle, " → "))
}

// CheckCycles reports a dependency cycle through any of the jobs named
// in through (all of them if through is empty), the other jobs being
// the rest of the graph: an error naming the job, the field and the
// cycle. A cycle among the other jobs alone is not reported.
func CheckCycles(jobs []Job, through ...string) error {
	g := upstreamOf(jobs)
	if len(through) == 0 {
		for _, j := range jobs {
			through = append(through, j.Name)
		}
	}
	for _, n := range through {
		if c := cycleThrough(g, n); c != nil {
			return cycleError(c)
		}
	}
	return nil
}

// Graph is the dependency graph of a set of jobs, as `ctl job graph`
// prints it.
type Graph struct {
	// Jobs are in dependency order: a job comes after the jobs it waits
	// for. Jobs on a cycle come last, in name order.
	Jobs []GraphJob `json:"jobs"`
	// Cycles are the dependency cycles, each from a job back to itself.
	Cycles [][]string `json:"cycles,omitempty"`
}

// GraphJob is one job of a Graph.
type GraphJob struct {
	Name string `json:"name"`
	// Level is 0 for a job that waits for no known job, else one more
	// than the highest level of its upstream jobs; -1 on a cycle.
	Level        int       `json:"level"`
	After        []string  `json:"after,omitempty"`
	WhenUpstream Condition `json:"whenUpstream,omitempty"`
	// Unknown are the upstream jobs that are not in the graph: its runs
	// wait for them until their starting deadline.
	Unknown []string `json:"unknown,omitempty"`
	// Downstream are the jobs that wait for this one.
	Downstream []string `json:"downstream,omitempty"`
	// Gates are the replication tasks whose target must be fresh
	// (Dependency.Task), as ParseDependency reads them.
	Gates []string `json:"gates,omitempty"`
}

// BuildGraph returns the dependency graph of jobs. A name given twice
// (two schedulers' files) has the union of their dependencies.
func BuildGraph(jobs []Job) Graph {
	g := upstreamOf(jobs)
	byName := map[string]*GraphJob{}
	var names []string
	for _, j := range jobs {
		gj := byName[j.Name]
		if gj == nil {
			gj = &GraphJob{Name: j.Name, Level: -2}
			byName[j.Name] = gj
			names = append(names, j.Name)
		}
		for _, d := range j.gates() {
			if !slices.Contains(gj.Gates, d.String()) {
				gj.Gates = append(gj.Gates, d.String())
			}
		}
		if len(j.After) > 0 && gj.WhenUpstream == "" {
			gj.WhenUpstream = j.WhenUpstream
			if gj.WhenUpstream == "" {
				gj.WhenUpstream = UpstreamSucceeded
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		gj := byName[n]
		gj.After = g[n]
		for _, u := range gj.After {
			if up, ok := byName[u]; ok {
				up.Downstream = append(up.Downstream, n)
			} else {
				gj.Unknown = append(gj.Unknown, u)
			}
		}
	}
	var out Graph
	onCycle := map[string]bool{}
	for _, n := range names {
		if onCycle[n] {
			continue
		}
		if c := cycleThrough(g, n); c != nil {
			out.Cycles = append(out.Cycles, c)
			for _, m := range c {
				onCycle[m] = true
			}
		}
	}
	// Levels by repeated relaxation: a job's level is known once its
	// known upstream jobs' are; what is left is on or behind a cycle.
	for changed := true; changed; {
		changed = false
		for _, n := range names {
			gj := byName[n]
			if gj.Level != -2 {
				continue
			}
			level, ready := 0, true
			for _, u := range gj.After {
				up, ok := byName[u]
				if !ok {
					continue
				}
				if up.Level < 0 {
					ready = false
					break
				}
				level = max(level, up.Level+1)
			}
			if ready {
				gj.Level, changed = level, true
			}
		}
	}
	for _, n := range names {
		if byName[n].Level == -2 {
			byName[n].Level = -1
		}
		out.Jobs = append(out.Jobs, *byName[n])
	}
	slices.SortStableFunc(out.Jobs, func(a, b GraphJob) int {
		la, lb := a.Level, b.Level
		if la < 0 {
			la = len(names) + 1
		}
		if lb < 0 {
			lb = len(names) + 1
		}
		return la - lb
	})
	return out
}
