"""fastai's entry points the zoo does not time, after `to_fastperf()` against fastai's defaults, on the zoo's Learners after one epoch
each, interleaved in one process (session 30): `validate()` (3 calls a round) or `tta(n=2)` (2 calls a round; image tasks).
Usage: python tools/entry_bench.py {validate,tta} ROUNDS TASK..."""
import sys, time, warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO
from fastperf.measure.clock import interleave, ratio_interval

what,rounds = sys.argv[1],int(sys.argv[2])
calls = {'validate': (3, lambda l: l.validate()), 'tta': (2, lambda l: l.tta(n=2))}
if what not in calls: sys.exit(__doc__)
n,call = calls[what]
for name in sys.argv[3:]:
    task = ZOO[name]()
    fa,fp = task.make(),task.make()
    fp.to_fastperf(verbose=False)
    for l in (fa, fp):
        with no_bar(l), l.no_logging(): l.fit(1)
    def job(l):
        def g(r):
            with no_bar(l), l.no_logging():
                t0 = time.perf_counter()
                for _ in range(n): call(l)
                return n/(time.perf_counter()-t0)
        return g
    res = interleave({'to_fastperf()': job(fp), 'fastai defaults': job(fa)}, rounds=rounds, show=False)
    print(f"{name}: {what} after to_fastperf() vs fastai's defaults {tuple(round(x,3) for x in ratio_interval(res['to_fastperf()'], res['fastai defaults']))}", flush=True)
