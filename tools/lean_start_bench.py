# `python tools/lean_start_bench.py ROUNDS TASK...`: `predict` and `get_preds` calls/s of two zoo Learners after `to_fastperf()` and a fit, one with
# fastperf's `lean_train_start` (model.to only where the model is not on its device), one with fastai's `TrainEvalCallback.before_fit`, interleaved (session 28).
import sys, time, statistics, warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _first_item
from fastperf.measure.clock import interleave, ratio_interval
for n in sys.argv[2:]:
    t = ZOO[n]()
    a = t.make(); a.to_fastperf(verbose=False); b = t.make(); b.to_fastperf(verbose=False)
    for l in (a, b):
        with no_bar(l), l.no_logging(): l.fit(1)
    del b.train_eval.__dict__['before_fit']
    assert 'before_fit' in a.train_eval.__dict__
    item = _first_item(a); d = {l: l.dls.valid.new(shuffle=False, drop_last=False) for l in (a, b)}
    def job(l, what):
        def g(r):
            with no_bar(l):
                t0 = time.perf_counter()
                for _ in range(10): l.predict(item) if what=='predict' else l.get_preds(dl=d[l])
                return 10/(time.perf_counter()-t0)
        return g
    for what in ('predict', 'get_preds'):
        res = interleave({'lean_train_start': job(a, what), "fastai's before_fit": job(b, what)}, rounds=int(sys.argv[1]), show=False)
        r = ratio_interval(res['lean_train_start'], res["fastai's before_fit"])
        print(n, what, 'lean_train_start vs fastai before_fit', tuple(round(x,3) for x in r), flush=True)
