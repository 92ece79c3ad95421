// CuratorPeer drives Apache Curator's lock recipes for the interoperability
// tests of coord/recipe: the Go test starts it, writes one command per line
// on its stdin and reads one answer per line on its stdout.
//
//   java CuratorPeer <connect string>
//
// Commands and answers:
//   lock <path>                 -> locked        InterProcessMutex.acquire
//   unlock                      -> unlocked      InterProcessMutex.release
//   rlock <path> / runlock      -> rlocked / runlocked     InterProcessReadWriteLock
//   wlock <path> / wunlock      -> wlocked / wunlocked
//   lease <path> <n>            -> leased <node> InterProcessSemaphoreV2.acquire
//   release                     -> released
//   contend <path> <n> <guard>  -> contended <n> <violations>
//       n rounds of: acquire; create the ephemeral guard node, which fails
//       if anybody else is inside; hold a few ms; delete it; release.
//   exit
// Errors are answered "error <message>"; the test fails on them.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Random;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(8000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        client.start();
        client.blockUntilConnected();
        System.out.println("ready");
        System.out.flush();

        InterProcessMutex mutex = null;
        InterProcessReadWriteLock rw = null;
        InterProcessSemaphoreV2 sem = null;
        Lease lease = null;
        Random random = new Random();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            String answer;
            try {
                switch (f[0]) {
                    case "lock":
                        mutex = new InterProcessMutex(client, f[1]);
                        mutex.acquire();
                        answer = "locked";
                        break;
                    case "unlock":
                        mutex.release();
                        answer = "unlocked";
                        break;
                    case "rlock":
                        rw = new InterProcessReadWriteLock(client, f[1]);
                        rw.readLock().acquire();
                        answer = "rlocked";
                        break;
                    case "runlock":
                        rw.readLock().release();
                        answer = "runlocked";
                        break;
                    case "wlock":
                        rw = new InterProcessReadWriteLock(client, f[1]);
                        rw.writeLock().acquire();
                        answer = "wlocked";
                        break;
                    case "wunlock":
                        rw.writeLock().release();
                        answer = "wunlocked";
                        break;
                    case "lease":
                        sem = new InterProcessSemaphoreV2(client, f[1], Integer.parseInt(f[2]));
                        lease = sem.acquire();
                        answer = "leased " + lease.getNodeName();
                        break;
                    case "release":
                        sem.returnLease(lease);
                        answer = "released";
                        break;
                    case "contend": {
                        InterProcessMutex m = new InterProcessMutex(client, f[1]);
                        int n = Integer.parseInt(f[2]);
                        int violations = 0;
                        for (int i = 0; i < n; i++) {
                            m.acquire();
                            try {
                                client.create().withMode(CreateMode.EPHEMERAL).forPath(f[3]);
                                Thread.sleep(random.nextInt(5));
                                client.delete().forPath(f[3]);
                            } catch (KeeperException.NodeExistsException e) {
                                violations++;
                            } finally {
                                m.release();
                            }
                        }
                        answer = "contended " + n + " " + violations;
                        break;
                    }
                    case "exit":
                        client.close();
                        return;
                    default:
                        answer = "error unknown command " + f[0];
                }
            } catch (Exception e) {
                answer = "error " + e;
            }
            System.out.println(answer);
            System.out.flush();
        }
        client.close();
    }
}
