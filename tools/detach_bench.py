# `python tools/detach_bench.py ROUNDS TASK...`: `get_preds` over the validation set on a zoo Learner set up as after training, with fastperf's
# plain-tensor detach in `fast_to_detach` and with fastai's `to_detach` for every call, interleaved in one process (session 28).
import sys, time, warnings; warnings.filterwarnings('ignore')
import fastperf.core as fc
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _warm_learner
from fastperf.measure.clock import interleave, ratio_interval
orig, off = fc._plain_detach, (lambda b, cpu: None)
for n in sys.argv[2:]:
    w = _warm_learner(ZOO[n]()); d = w.dls.valid.new(shuffle=False, drop_last=False)
    def job(f):
        def g(r):
            fc._plain_detach = f
            with no_bar(w):
                t0 = time.perf_counter()
                for _ in range(10): w.get_preds(dl=d)
                return 10/(time.perf_counter()-t0)
        return g
    res = interleave({'plain detach': job(orig), "fastai's": job(off)}, rounds=int(sys.argv[1]), show=False)
    fc._plain_detach = orig
    print(n, 'get_preds, plain detach vs fastai to_detach', tuple(round(x,3) for x in ratio_interval(res['plain detach'], res["fastai's"])), flush=True)
