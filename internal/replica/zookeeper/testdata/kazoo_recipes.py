"""kazoo's recipes through gait replica's ZooKeeper adapter, each client on
a different agent. Usage: kazoo_recipes.py AGENT [AGENT...]; prints one line
per check and a closing 'N passed, M failed'."""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.counter import Counter
from kazoo.recipe.election import Election
from kazoo.recipe.lock import Lock
from kazoo.recipe.queue import Queue

agents = sys.argv[1:]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)


def client(i):
    c = KazooClient(hosts=agents[i % len(agents)], timeout=10.0)
    c.start(timeout=15)
    return c


clients = [client(i) for i in range(max(4, len(agents)))]
root = clients[0]
root.ensure_path("/recipes")

# Lock: each client takes the lock and increments a plain node without a
# version check; only mutual exclusion keeps every increment.
ROUNDS = 10
root.create("/recipes/locked", b"0")
overlap = []
holders = [0]


def locker(c):
    lock = Lock(c, "/recipes/lock")
    for _ in range(ROUNDS):
        with lock:
            holders[0] += 1
            if holders[0] > 1:
                overlap.append(1)
            v, _ = c.get("/recipes/locked")
            c.set("/recipes/locked", str(int(v) + 1).encode())
            holders[0] -= 1


ts = [threading.Thread(target=locker, args=(c,)) for c in clients]
[t.start() for t in ts]
[t.join() for t in ts]
v, _ = root.get("/recipes/locked")
check("lock", int(v) == ROUNDS * len(clients) and not overlap,
      f"counter {int(v)} of {ROUNDS * len(clients)}, {len(overlap)} overlaps")

# Counter: version-checked increments from every client at once.
def count(c):
    ctr = Counter(c, "/recipes/counter")
    for _ in range(ROUNDS):
        ctr += 1


ts = [threading.Thread(target=count, args=(c,)) for c in clients]
[t.start() for t in ts]
[t.join() for t in ts]
final = Counter(root, "/recipes/counter").value
check("counter", final == ROUNDS * len(clients), f"{final} of {ROUNDS * len(clients)}")

# Election: every client runs for leader; each leads once, never two at once.
led, leading, bad = [], [0], []
guard = threading.Lock()


def lead(i):
    with guard:
        leading[0] += 1
        if leading[0] > 1:
            bad.append(i)
    led.append(i)
    time.sleep(0.05)
    with guard:
        leading[0] -= 1


ts = [threading.Thread(target=Election(c, "/recipes/election", f"c{i}").run, args=(lead, i))
      for i, c in enumerate(clients)]
[t.start() for t in ts]
[t.join(timeout=60) for t in ts]
check("election", sorted(led) == list(range(len(clients))) and not bad,
      f"{len(led)} of {len(clients)} led, {len(bad)} overlaps")

# Queue: producers on some agents, consumers on others; every item once.
N = 40
producer, consumer = clients[0], clients[1]
q = Queue(producer, "/recipes/queue")
for i in range(N):
    q.put(f"item-{i}".encode())
got = []
cq = Queue(consumer, "/recipes/queue")
deadline = time.time() + 30
while len(got) < N and time.time() < deadline:
    item = cq.get()
    if item is not None:
        got.append(item.decode())
check("queue", got == [f"item-{i}" for i in range(N)], f"{len(got)} of {N} in order")

# Ephemeral node of one client vanishes for another when its session ends;
# a data watch set through one agent fires once for a change through another.
eph = client(2)
eph.create("/recipes/eph", b"", ephemeral=True)
seen = []
fired = threading.Event()


def watcher(event):
    seen.append(event)
    fired.set()


root.exists("/recipes/eph", watch=watcher)
eph.stop()
eph.close()
fired.wait(10)
check("ephemeral", root.exists("/recipes/eph") is None and len(seen) == 1 and seen[0].type == "DELETED",
      f"events {[e.type for e in seen]}")

calls = []
root.create("/recipes/w", b"0")
root.get("/recipes/w", watch=lambda e: calls.append(e))
clients[1].set("/recipes/w", b"1")
clients[1].set("/recipes/w", b"2")
time.sleep(1)
check("watch-once", len(calls) == 1, f"{len(calls)} events")

for c in clients:
    c.stop()
    c.close()
print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
