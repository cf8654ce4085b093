"""Where a cheap model's `get_preds` spends what a plain eval loop does not (session 34): on a zoo Learner set up as after training with
fastperf (`_warm_learner`: `to_fastperf()`, a validation pass, `to_fast_inference()`), `learn.get_preds(dl=...)` over the validation set
in the dataset's order, timestamped by hooks on the model (before and after each forward), interleaved with `plain_inference` over the
same batches made ready beforehand with `to_fast_inference`'s features (the zoo's reference).
  1. per call, medians over ROUNDS calls: before the first forward, between two forwards, after the last, and the forwards themselves
  2. per call, each callback's loop-level events (`before_fit` ... `after_fit`; the batch events of fastperf's lean loop are not sent)
  3. the ceiling (session 35): `get_preds`, a bare loop over the same lean loader (`lean_iter`, the cast, channels-last, autocast, the
     forward, the concatenation and activation; a recurrent model reset first and its output taken from its states, as fastai's
     `ModelResetter` and `RNNCallback` do; no event, no context) and the plain loop, interleaved calls (ms per call, ratios to the
     plain loop with intervals): how far the loader alone, with no loop protocol at all, is from the plain loop's ready batches
Why not `fastperf.measure.inference.get_preds_breakdown`: its timestamping callbacks are callbacks the lean inference loop does not know,
so they send the Learner back to fastai's loop; hooks on the model leave the loop a user gets after `to_fast_inference()` as it is.
Usage: python tools/get_preds_costs.py ROUNDS TASK[:N]...   (e.g. `python tools/get_preds_costs.py 60 tabular digits_cnn`; nothing else running)
  TASK:N: a zoo task whose maker takes `n` (tabular, text, unet, collab, lm), made with `n=N` (`collab:200000`: 157 validation batches)"""
import sys, time, statistics, collections, warnings; warnings.filterwarnings('ignore')
from fastai.callback.core import Callback
from fastai.basics import getcallable
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _warm_learner
from fastperf.measure.reference import plain_inference
from fastperf.measure.clock import interleave, ratio_interval
from fastperf.core import lean_iter
from fastperf.pipeline import lean_pipelines, unlean_pipelines, hold_item_cache, release_item_caches, sliced_batches
import contextlib
from fastperf.channelslast import as_channels_last
import torch

def stamps(model):
    "A list the model's forwards append ('pre'|'post', time) to"
    ts = []
    model.register_forward_pre_hook(lambda m,a: ts.append(('pre', time.perf_counter())))
    model.register_forward_hook(lambda m,a,o: ts.append(('post', time.perf_counter())))
    return ts

def phases(ts, t0, t1):
    pre,post = [t for k,t in ts if k=='pre'],[t for k,t in ts if k=='post']
    gaps = [a-b for a,b in zip(pre[1:], post[:-1])]
    return dict(before_first=pre[0]-t0, between_each=sum(gaps)/max(len(gaps), 1), after_last=t1-post[-1], forwards=sum(b-a for a,b in zip(pre, post)), total=t1-t0)

def run(task, rounds):
    name,_,n = task.partition(':') # TASK:N, a task whose maker takes `n` made at that size (`collab:200000`: a validation set of 40,000 ratings)
    w = _warm_learner(ZOO[name](**({'n': int(n)} if n else {})))
    vd = w.dls.valid
    dl = vd.new(shuffle=False, drop_last=False)
    batches = [cast_to_tensor(b) for b in dl]
    act,ni = getcallable(w.loss_func, 'activation'),w.dls.n_inp
    fi = next(c for c in w.cbs if isinstance(c, FastInference)) # the features the plain loop gets too: `to_fast_inference`'s
    plain = lambda: plain_inference(w.model, batches, channels_last=fi.channels_last, precision=fi.precision, act=act, n_inp=ni)
    ts = stamps(w.model)
    per = collections.defaultdict(float)
    orig = Callback.__call__
    def timed(self, name):
        t0 = time.perf_counter()
        try: return orig(self, name)
        finally: per[(type(self).__name__, name)] += time.perf_counter()-t0
    res = {'get_preds': [], 'plain': []}
    with no_bar(w):
        for _ in range(3): w.get_preds(dl=dl); plain()
        for r in range(rounds):
            ts.clear(); Callback.__call__ = timed
            try: t0 = time.perf_counter(); w.get_preds(dl=dl); t1 = time.perf_counter()
            finally: Callback.__call__ = orig
            res['get_preds'].append(phases(ts, t0, t1))
            ts.clear(); t0 = time.perf_counter(); plain(); t1 = time.perf_counter()
            res['plain'].append(phases(ts, t0, t1))
    print(f"{task}: {len(dl)} batches of {dl.bs}, {len(dl.dataset)} items, {fi.precision}{' + channels-last' if fi.channels_last else ''}; medians of {rounds} interleaved calls, us")
    for k,rows in res.items():
        print(f"  {k:10s} " + ', '.join(f"{p} {statistics.median(r[p] for r in rows)*1e6:,.0f}" for p in rows[0]))
    print("  callbacks' loop-level events in get_preds, us per call (the batch events are not sent in fastperf's lean loop):")
    for (c,e),v in sorted(per.items(), key=lambda kv: -kv[1]): print(f"    {v/rounds*1e6:7.1f}  {c}.{e}")
    ceiling(w, dl, fi, act, ni, plain, max(rounds//4, 5))

class _Owner: "Who holds the item cache for the bare loop (weakly referenced, as a callback would be)"

def ceiling(w, dl, fi, act, ni, plain, rounds):
    "Part 3: `get_preds` against a bare loop over the same lean loader and against the plain loop, 10 calls a round"
    lp = lean_pipelines(dl, cache=False) # (what `FastInference` does for each loop: lean pipelines, the item cache training filled held, ...
    owner = _Owner(); hold_item_cache(dl.dataset, owner, create=False) # ... and channels-last batches sliced from a copy of the stack, below)
    dt = {'bf16': torch.bfloat16, 'fp16': torch.float16}.get(fi.precision)
    def bare():
        w.model.eval(); out = []
        if hasattr(w.model, 'reset'): w.model.reset() # (fastai's `ModelResetter`, around the loop of a recurrent model)
        with torch.inference_mode(), torch.autocast(fi._dev_type, dtype=dt or torch.bfloat16, enabled=dt is not None):
            with (sliced_batches(dl, ni) if fi.channels_last else contextlib.nullcontext()):
                for b in lean_iter(dl):
                    xb = cast_to_tensor(b[:ni])
                    o = w.model(*(as_channels_last(xb) if fi.channels_last else xb))
                    out.append((o[0] if isinstance(o, tuple) else o).float()) # (fastai's `RNNCallback`: a recurrent model's output, not its hidden states)
        return act(torch.cat(out))
    def gp(reorder=True):
        with no_bar(w): return w.get_preds(dl=dl, reorder=reorder)[0]
    try:
        assert torch.equal(gp(reorder=False), bare()), "the bare loop must give get_preds' predictions (in the loader's order: a `SortedDL` is reordered after)"
        def job(f):
            def g(r):
                t0 = time.perf_counter()
                for _ in range(10): f()
                return 10/(time.perf_counter()-t0)
            return g
        res = interleave({'get_preds': job(gp), 'bare lean loop': job(bare), 'plain': job(plain)}, rounds=rounds)
    finally: unlean_pipelines(lp); release_item_caches(owner)
    print(f"  the ceiling, {rounds} interleaved rounds of 10 calls: ms per call, and the ratio to the plain loop [95% interval]")
    for k,v in res.items(): print(f"    {k:15s} {1000/statistics.median(v):6.2f} ms  {ratio_interval(v, res['plain'])[0]:.3f} [{ratio_interval(v, res['plain'])[1]:.3f}-{ratio_interval(v, res['plain'])[2]:.3f}]")

if __name__=='__main__':
    if len(sys.argv)<3: sys.exit(__doc__)
    for t in sys.argv[2:]: run(t, int(sys.argv[1]))
