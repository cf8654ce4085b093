"""`get_preds` over the validation set on zoo Learners set up as after training with fastperf (`_warm_learner`), with
`FastInference`'s lean loop and with fastai's loop (`lean_loop=False`), interleaved in one process; also says which loop ran.
Usage: python tools/lean_infer_bench.py ROUNDS TASK... (session 28: the text classifier's RNN callbacks in the lean loop)"""
import sys, time, warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _warm_learner
from fastperf.measure.clock import interleave, ratio_interval

for name in sys.argv[2:]:
    w = _warm_learner(ZOO[name]()); d = w.dls.valid.new(shuffle=False, drop_last=False)
    fi = w.fast_inference
    def job(lean):
        def g(r):
            fi.lean_loop = lean
            with no_bar(w):
                t0 = time.perf_counter()
                for _ in range(5): w.get_preds(dl=d)
                return 5/(time.perf_counter()-t0)
        return g
    res = interleave({'lean': job(True), 'fastai': job(False)}, rounds=int(sys.argv[1]), show=False)
    fi.lean_loop = True
    with no_bar(w): w.get_preds(dl=d)
    print(f"{name}: get_preds, lean loop vs fastai's loop {tuple(round(x,3) for x in ratio_interval(res['lean'], res['fastai']))} (the loop that ran: {fi.last_loop})", flush=True)
