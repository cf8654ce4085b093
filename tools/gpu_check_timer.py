"""The timer check of tools/gpu_check.py: `ThroughputTimer` against an outside clock, and what the timer costs.

    python tools/gpu_check_timer.py OUTDIR [--device cuda|cpu] [--pairs N] [--steps N] [--warmup N]

Pairs of fits with and without the timer alternate (the one that goes first alternates too), so drifting load hits both
alike; the outside clock is fastperf's `measure_fit` (the device synchronized at both ends of its window, samples counted
by itself). Per pair: timer samples/s over the outside clock's (agreement), and with-timer over without-timer samples/s
(overhead). The method is `timer_bench` of nbs/09_timer.ipynb (not exported, so written out here). On CUDA the timer
reads CUDA events (its default) and, for comparison, `sync=True`. Writes OUTDIR/timer.csv and prints the table."""
import argparse, statistics, sys, warnings
from pathlib import Path

def timer_check(make_learn, steps, warmup, pairs, **timer_kw):
    import pandas as pd
    from fastperf.core import no_bar
    from fastperf.measure.clock import measure_fit
    from fastperf.timer import ThroughputTimer
    plain,timed = make_learn([]),make_learn([ThroughputTimer(warmup=warmup, **timer_kw)])
    agree,cost,sps0,sps1 = [],[],[],[]
    def run(l):
        with no_bar(l), l.no_logging(), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            return measure_fit(l, steps=steps, warmup=warmup)
    for i in range(pairs):
        if i%2: r1,r0 = run(timed),run(plain)
        else:   r0,r1 = run(plain),run(timed)
        agree.append(timed.throughput_timer.samples_per_sec/r1['samples_per_sec'])
        cost.append(r1['samples_per_sec']/r0['samples_per_sec'])
        sps0.append(r0['samples_per_sec']); sps1.append(r1['samples_per_sec'])
    s = timed.throughput_timer.summary()
    return {'samples/s without timer': statistics.median(sps0), 'samples/s with timer': statistics.median(sps1),
            'timer / outside clock': statistics.median(agree), 'timer / outside clock min': min(agree), 'timer / outside clock max': max(agree),
            'with timer / without': statistics.median(cost), 'with / without min': min(cost), 'with / without max': max(cost),
            'pairs': pairs, 'timing': s.get('timing')}

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('out'); p.add_argument('--device', default=None)
    p.add_argument('--pairs', type=int, default=None); p.add_argument('--steps', type=int, default=None); p.add_argument('--warmup', type=int, default=None)
    a = p.parse_args(argv)
    import torch, pandas as pd
    from fastai.learner import Learner
    from fastai.losses import CrossEntropyLossFlat
    from fastperf.measure.data import synthetic_dls, small_cnn
    from fastperf.core import device_name
    dev = torch.device(a.device or ('cuda' if torch.cuda.is_available() else 'cpu'))
    rows = {}
    if dev.type=='cuda':
        from torchvision.models import resnet18
        from fastai.callback.fp16 import MixedPrecision
        steps,warmup,pairs = a.steps or 40,a.warmup or 10,a.pairs or 4
        dls = synthetic_dls(n_train=64*(steps+warmup+2), n_valid=64, size=128, bs=64, device=dev)
        mk = lambda cbs: Learner(dls, resnet18(num_classes=10), loss_func=CrossEntropyLossFlat(), cbs=[MixedPrecision(amp_mode='bf16'), *cbs])
        rows['resnet18 128px bs64 bf16, CUDA events'] = timer_check(mk, steps, warmup, pairs)
        rows['resnet18 128px bs64 bf16, sync=True'] = timer_check(mk, steps, warmup, pairs, sync=True)
    else:
        steps,warmup,pairs = a.steps or 8,a.warmup or 2,a.pairs or 2
        dls = synthetic_dls(n_train=16*(steps+warmup+2), n_valid=16, size=32, bs=16, device=dev)
        mk = lambda cbs: Learner(dls, small_cnn(), loss_func=CrossEntropyLossFlat(), cbs=cbs)
        rows['small_cnn 32px bs16, perf_counter'] = timer_check(mk, steps, warmup, pairs)
    df = pd.DataFrame(rows).T
    df.insert(0, 'device', device_name(dev))
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out/'timer.csv', index_label='case')
    with pd.option_context('display.width', 200, 'display.max_columns', 20): print(df.round(3).to_string())
    bad = df[(df['timer / outside clock']-1).abs()>0.1]
    if len(bad): print(f"timer check: the timer is off the outside clock by more than 10% in: {', '.join(bad.index)}"); return 1
    return 0

if __name__=='__main__': sys.exit(main())
