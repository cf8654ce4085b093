# `python tools/amp_one_item.py [task ...] [--device cuda]`: time of a forward in bf16 autocast over the same forward in fp32, per batch size,
# for the zoo's models in eval mode and channels-last, under inference_mode (15 interleaved pairs per size, medians of the per-pair ratios).
# What `fastperf.rules.autocast_pays` rests on (session 28; the numbers are in nbs/01_rules.ipynb). Run it with nothing else running.
import sys, time, statistics, warnings, torch
warnings.filterwarnings('ignore')
from fastperf.core import device_sync
from fastperf.measure.zoo import ZOO

def ratios(name, dev, sizes=(1,2,4,8,16,32), pairs=15):
    l = ZOO[name]().make()
    m = l.model.eval().to(dev).to(memory_format=torch.channels_last)
    b = l.dls.valid.one_batch()
    n_inp = getattr(l.dls, 'n_inp', 1)
    xs = [x.as_subclass(torch.Tensor).to(dev) for x in b[:n_inp]]
    out = {}
    for bs in sizes:
        if bs>len(xs[0]): break
        x = [t[:bs].contiguous(memory_format=torch.channels_last) if t.ndim==4 else t[:bs] for t in xs]
        def run(bf):
            device_sync(dev); t0 = time.perf_counter()
            with torch.inference_mode(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf): m(*x)
            device_sync(dev); return time.perf_counter()-t0
        for _ in range(2): run(False); run(True)
        out[bs] = statistics.median(run(True)/run(False) for _ in range(pairs))
    return sum(p.numel() for p in m.parameters()), out

if __name__=='__main__':
    args = sys.argv[1:]
    dev = torch.device(args[args.index('--device')+1] if '--device' in args else 'cpu')
    names = [a for a in args if a in ZOO] or ['resnet18', 'unet', 'digits_cnn', 'multilabel', 'vit']
    print(f"bf16 autocast time / fp32 time of one forward ({dev.type}, torch {torch.__version__}, {torch.get_num_threads()} threads)")
    for nm in names:
        n,r = ratios(nm, dev)
        print(f"{nm:11s} {n:>10,} params  " + '  '.join(f"bs{k}: {v:.2f}" for k,v in r.items()), flush=True)
