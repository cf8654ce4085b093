"""The item cache's effect, side by side: zoo tasks trained with `to_fastperf()` with and without the item cache (the same
Learner settings; the cache taken away from one), and `get_preds` under `to_fast_inference()` on each, in interleaved rounds.
Usage: python tools/item_cache_bench.py [--tasks digits_cnn multilabel vit] [--rounds 5]"""
import argparse, time, warnings
warnings.filterwarnings('ignore')
from fastperf.measure.zoo import ZOO
from fastperf.measure.clock import measure_fit, interleave, ratio_interval
from fastperf.copies import release_item_caches
from fastperf.core import no_bar
import fastperf.recommend, fastperf.inference # noqa: F401 (Learner.to_fastperf, Learner.to_fast_inference)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tasks', nargs='+', default=['digits_cnn', 'multilabel', 'vit']); p.add_argument('--rounds', type=int, default=5)
    a = p.parse_args()
    for name in a.tasks:
        task = ZOO[name]()
        cached = task.make(); cached.to_fastperf(verbose=False)
        plain = task.make(); plain.to_fastperf(verbose=False)
        for dl in plain.dls.loaders: release_item_caches(dl) # the same lean loaders, no cache
        def fit(l):
            def f(r):
                with no_bar(l), l.no_logging(): return measure_fit(l, steps=task.steps, warmup=task.warmup if r==0 else 1)['samples_per_sec']
            return f
        def preds(l):
            n = len(l.dls.valid.dataset)
            def f(r):
                t = time.perf_counter()
                with no_bar(l): l.get_preds()
                return n/(time.perf_counter()-t)
            return f
        res = dict(interleave({'train, cache': fit(cached), 'train, no cache': fit(plain)}, rounds=a.rounds, show=False))
        for l in (cached, plain): l.to_fast_inference(verbose=False)
        res.update(dict(interleave({'get_preds, cache': preds(cached), 'get_preds, no cache': preds(plain)}, rounds=a.rounds, show=False)))
        for ph in ('train', 'get_preds'):
            r,lo,hi = ratio_interval(res[f'{ph}, cache'], res[f'{ph}, no cache'])
            print(f"{name:11s} {ph:9s} cache {sorted(res[f'{ph}, cache'])[a.rounds//2]:8,.0f}/s  no cache {sorted(res[f'{ph}, no cache'])[a.rounds//2]:8,.0f}/s  "
                  f"ratio {r:.2f} [{lo:.2f}-{hi:.2f}]", flush=True)

if __name__=='__main__': main()
