# (Session 27 GPU check: `python3 tools/gpu_nvjpeg_micro.py` on the device machine.) Per-image vs batched nvJPEG vs CPU decode of the 640 sample photos (500x375 q90), one torch thread, host tensors at the end.
import sys, time, tempfile, torch, torchvision
from pathlib import Path
from torchvision.io import decode_jpeg, ImageReadMode
from fastperf.measure.data import photo_folder
torch.set_num_threads(1)
d = Path(tempfile.mkdtemp()); photo_folder(d)
fs = sorted(d.rglob('*.jpg'))[:640]
bs = [torch.frombuffer(bytearray(f.read_bytes()), dtype=torch.uint8) for f in fs]
print(len(bs), 'jpegs', torch.__version__, torchvision.__version__, torch.cuda.get_device_name(0), flush=True)
dev = torch.device('cuda')
def cpu1(): return [decode_jpeg(b, mode=ImageReadMode.RGB) for b in bs]
def gpu1(): return [decode_jpeg(b, mode=ImageReadMode.RGB, device=dev).cpu() for b in bs]
def gpub(k):
    def f():
        out = []
        for i in range(0, len(bs), k): out += [x.cpu() for x in decode_jpeg(bs[i:i+k], mode=ImageReadMode.RGB, device=dev)]
        return out
    return f
def gpub_keep(k): # batched, one copy per batch (stacked: all 500x375 here)
    def f():
        out = []
        for i in range(0, len(bs), k): out.append(torch.stack(decode_jpeg(bs[i:i+k], mode=ImageReadMode.RGB, device=dev)).cpu())
        return out
    return f
cases = dict(cpu=cpu1, gpu_each=gpu1, gpu_batch16=gpub(16), gpu_batch64=gpub(64), gpu_batch64_stack=gpub_keep(64))
ref = cpu1()
for k,f in cases.items():
    r = f(); torch.cuda.synchronize()
    mx = max((a.int()-b.int()).abs().max().item() for a,b in zip(ref, [x for y in r for x in (y if y.ndim==4 else [y])]))
    print(f'{k}: max |pixel diff| vs CPU {mx}', flush=True)
res = {k: [] for k in cases}
for rnd in range(5):
    for k,f in cases.items():
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); res[k].append(len(bs)/(time.perf_counter()-t))
for k,v in res.items(): print(f'{k:20s} img/s median {sorted(v)[2]:8.0f}  all {[round(x) for x in v]}', flush=True)
