// Package realclients proves `shepherd coord` with ZooKeeper clients
// nobody on this project wrote, each run against Apache ZooKeeper 3.8 as
// well, which proves the scenario itself:
//
//   - zkCli.sh, the Java command-line client: scripted sessions
//     (testdata/zkcli*_script.txt) fed to one zkCli process on stdin; the
//     normalised transcripts must equal testdata/zkcli*.golden, recorded
//     from ZooKeeper with -update (zkcli_test.go);
//   - kazoo, the Python client: testdata/kazoo_session.py checks its own
//     results, section by section (kazoo_test.go);
//   - go-zookeeper: a server restarted on the same port and data directory
//     under a connected client, which must resume its session, keep its
//     ephemerals and see its watches fire (reconnect_test.go).
//
// The package has only tests. The peers come from the Debian packages
// zookeeper and python3-kazoo (see internal/testpeer): with SHEPHERD_IT=1,
// as `make test` sets, a missing one fails the test with an install hint;
// otherwise the test is skipped.
package realclients
