# `python tools/precision_bs_bench.py ROUNDS BS1,BS2,... TASK...`: training samples/s of zoo tasks built with other batch sizes, `to_fastperf()` with the
# CPU precision rule (bf16 + channels-last for convolutional models) against `to_fastperf(precision='fp32')` and fastai's defaults, interleaved (session 28).
import sys, time, statistics, torch, warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import resnet_task, digits_task, unet_task
from fastperf.measure.clock import interleave, ratio_interval, measure_fit
rounds = int(sys.argv[1])
mk = dict(resnet18=resnet_task, digits_cnn=digits_task, unet=unet_task)
for name in sys.argv[3:]:
  for bs in map(int, sys.argv[2].split(',')):
    task = mk[name](bs=bs)
    ls = {}
    for k,kw in {'rule': {}, 'fp32': dict(precision='fp32'), 'fastai': None}.items():
        l = task.make()
        if kw is not None: l.to_fastperf(verbose=False, **kw)
        with no_bar(l), l.no_logging(): l.fit(1)
        ls[k] = l
    steps = max(8, min(40, 256//bs))
    def job(l):
        def f(r):
            with no_bar(l), l.no_logging(): return measure_fit(l, steps=steps, warmup=2)['samples_per_sec']
        return f
    res = interleave({k:job(l) for k,l in ls.items()}, rounds=rounds, show=False)
    r = ratio_interval(res['rule'], res['fp32'])
    r2 = ratio_interval(res['rule'], res['fastai'])
    print(f"train {name:10s} bs{bs:<3d} rule vs fp32: {r[0]:.3f} [{r[1]:.3f}-{r[2]:.3f}]  rule vs fastai: {r2[0]:.3f} [{r2[1]:.3f}-{r2[2]:.3f}]  fp32 {statistics.median(res['fp32']):.0f}/s", flush=True)
