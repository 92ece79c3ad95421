package monitor

// childEnv, when set, makes the test binary a monitor process (for the
// kill -9 test).
const childEnv = "MONITOR_TEST_CHILD"

func runChild(string) int { return 2 }
