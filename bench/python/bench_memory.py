"""Memory of concurrent decoding: one nazar.Translator with R replicas, R threads translating.

    PYTHONPATH=build/python python3 bench/python/bench_memory.py MODEL SOURCES \
        [--replicas 1 4] [--sentences 64] [--batch 32] [--beam 5]

For each R, in a fresh process: the RSS before and after loading the model, and the peak RSS
while R threads each translate the first N lines of SOURCES (docs/decoding.md "Thread safety").
"""
import argparse
import resource
import subprocess
import sys
import threading


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(a):
    import nazar

    with open(a.sources, encoding="utf-8") as f:
        src = [line.rstrip("\n") for line in f][: a.sentences]
    before = rss_mb()
    tr = nazar.Translator(a.model, replicas=a.child)
    loaded = rss_mb()
    threads = [
        threading.Thread(target=tr.translate, args=(src,), kwargs={"beam": a.beam, "batch_size": a.batch})
        for _ in range(a.child)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"replicas {a.child}: before load {before:.0f} MB, after load {loaded:.0f} MB, "
          f"peak while decoding {peak:.0f} MB")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("sources")
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 4])
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a)
        return
    for r in a.replicas:  # one process each: peak RSS is per process
        args = [a.model, a.sources, "--sentences", str(a.sentences), "--batch", str(a.batch),
                "--beam", str(a.beam), "--child", str(r)]
        subprocess.run([sys.executable, __file__] + args, check=True)


if __name__ == "__main__":
    main()
