"""A/B of one inference shortcut: `get_preds` over the validation set on zoo Learners set up as after training with fastperf
(`_warm_learner`), with the shortcut and without it, interleaved in one process (session 28).
  loop:   `FastInference`'s lean loop against fastai's loop (`lean_loop=False`); also says which loop ran
  detach: `fast_to_detach`'s direct detach of plain tensors against fastai's `to_detach` for every call
Usage: python tools/infer_ab_bench.py {loop,detach} ROUNDS TASK..."""
import sys, time, warnings; warnings.filterwarnings('ignore')
import fastperf.core as fc
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _warm_learner
from fastperf.measure.clock import interleave, ratio_interval

what,rounds = sys.argv[1],int(sys.argv[2])
plain_detach = fc._plain_detach
for name in sys.argv[3:]:
    w = _warm_learner(ZOO[name]()); d = w.dls.valid.new(shuffle=False, drop_last=False)
    fi = w.fast_inference
    def setting(on):
        if what=='loop': fi.lean_loop = on
        else: fc._plain_detach = plain_detach if on else (lambda b, cpu: None)
    def job(on):
        def g(r):
            setting(on)
            with no_bar(w):
                t0 = time.perf_counter()
                for _ in range(10): w.get_preds(dl=d)
                return 10/(time.perf_counter()-t0)
        return g
    res = interleave({'with': job(True), 'without': job(False)}, rounds=rounds, show=False)
    setting(True)
    with no_bar(w): w.get_preds(dl=d)
    print(f"{name}: get_preds with the {what} shortcut vs without {tuple(round(x,3) for x in ratio_interval(res['with'], res['without']))} (loop: {fi.last_loop})", flush=True)
