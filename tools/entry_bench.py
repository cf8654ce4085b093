"""fastai's entry points the zoo does not time, after `to_fastperf()` against fastai's defaults, on the zoo's Learners after one epoch
each, interleaved in one process (session 30): `validate()` (3 calls a round) or `tta(n=2)` (2 calls a round; image tasks); or (session 41)
`fit_metrics`: `fit_one_cycle(1)` with the metrics a user passes for the task (accuracy, `accuracy_multi`, `Dice`, `rmse`, perplexity), the
whole epoch timed (training, the validation pass and its metrics, the schedule), one a round, on Learners given the metrics when made;
`lr_find` (`lr_find(num_it=40)` on the Learners as made, as users run it before training, one a round: its training steps, and the
save and load of the weights around them) and `fine_tune`
(`fine_tune(1)`: an epoch frozen, an epoch unfrozen; a vision_learner's or unet_learner's).
Usage: python tools/entry_bench.py {validate,tta,fit_metrics,lr_find,fine_tune} ROUNDS TASK..."""
import sys, time, warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastai.torch_core import set_seed
import fastai.callback.schedule # `Learner.lr_find`, `fit_one_cycle`, `fine_tune` (a plain `Learner`'s script imports them with fastai's `all` modules)
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO
from fastperf.measure.clock import interleave, ratio_interval

what,rounds = sys.argv[1],int(sys.argv[2])
calls = {'validate': (3, lambda l: l.validate()), 'tta': (2, lambda l: l.tta(n=2)), 'fit_metrics': (1, lambda l: l.fit_one_cycle(1)),
         'lr_find': (1, lambda l: l.lr_find(num_it=40, show_plot=False)), 'fine_tune': (1, lambda l: l.fine_tune(1))}
if what not in calls: sys.exit(__doc__)
n,call = calls[what]
for name in sys.argv[3:]:
    task = ZOO[name]()
    fa,fp = task.make(),task.make()
    if what=='fit_metrics':
        from fastai.metrics import accuracy, accuracy_multi, Dice, rmse, Perplexity
        mets = lambda: dict(multilabel=[accuracy_multi], unet=[Dice()], collab=[rmse], lm=[accuracy, Perplexity()]).get(name, [accuracy])
        for l in (fa, fp): l.metrics = mets() # (each Learner its own metric objects)
    fp.to_fastperf(verbose=False)
    for l in (fa, fp):
        if what=='lr_find': break # (as users run it: before training; after an epoch a model with a tiny loss can stop fastai's finder within a few steps by noise, where its `valley` fails)
        set_seed(0)
        with no_bar(l), l.no_logging(): l.fit(1)
    def job(l):
        def g(r):
            set_seed(r+1) # each round's fits from the same seed: the same dropout masks for the two Learners (their loaders shuffle from their own generators, made the same by `make`)
            with no_bar(l), l.no_logging():
                t0 = time.perf_counter()
                for _ in range(n): call(l)
                return n/(time.perf_counter()-t0)
        return g
    res = interleave({'to_fastperf()': job(fp), 'fastai defaults': job(fa)}, rounds=rounds, show=False)
    print(f"{name}: {what} after to_fastperf() vs fastai's defaults {tuple(round(x,3) for x in ratio_interval(res['to_fastperf()'], res['fastai defaults']))}", flush=True)
    if what=='fit_metrics': # the last epoch's validation loss and metrics of each (the same seeds, the same batches: fp32 tasks agree closely, bf16 ones within its rounding's drift)
        print(f"  last epoch's valid loss and metrics: to_fastperf() {[round(float(v), 5) for v in fp.recorder.values[-1][1:]]}, fastai's defaults {[round(float(v), 5) for v in fa.recorder.values[-1][1:]]}", flush=True)
