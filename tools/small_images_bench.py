"""fastai vs lean_pipelines vs fast_images on a folder of small images (1,024 + 256 random 32px images, half PNG and half JPEG), no item
transform and Resize(28): images/s of the first and second training epoch and the first validation epoch, 5 interleaved rounds,
one thread. The no-harm check for tiny images: `python tools/small_images_bench.py` (writes the folder to /tmp/smallimgs once)."""
import warnings; warnings.filterwarnings('ignore')
import time, torch, numpy as np, gc
torch.set_num_threads(1)
from pathlib import Path
from PIL import Image
from fastai.vision.all import *
from fastperf.copies import lean_pipelines
from fastperf.images import fast_images
from fastperf.measure.clock import ratio_interval
root = Path('/tmp/smallimgs')
if not root.exists():
    rng = np.random.default_rng(0)
    for split,n in (('train',1024),('valid',256)):
        for k in range(n):
            d = root/split/f'c{k%4}'; d.mkdir(parents=True, exist_ok=True)
            a = rng.integers(0,255,(32,32,3)).astype(np.uint8)
            Image.fromarray(a).save(d/f'{k}.png') if k%2 else Image.fromarray(a).save(d/f'{k}.jpg', quality=90)
def mk(kind, tfm):
    dls = ImageDataLoaders.from_folder(root, valid='valid', item_tfms=tfm, bs=64, num_workers=0, device='cpu')
    for dl in dls.loaders: dl.after_batch = Pipeline([])
    if kind=='lean': lean_pipelines(dls)
    if kind=='fast': fast_images(dls)
    return dls
def ep(dl):
    t=time.perf_counter(); n=0
    for b in dl: n+=len(b[0])
    return n/(time.perf_counter()-t)
for tfm in (None, Resize(28)):
    res = {}
    for r in range(5):
        for k in ['fastai','lean','fast']:
            gc.collect(); dls = mk(k, tfm)
            res.setdefault(k,[]).append((ep(dls.train), ep(dls.train), ep(dls.valid)))
    for k in ['lean','fast']:
        for j,nm in enumerate(['train first','train 2nd','valid first']):
            print(tfm, k, nm, round(np.median([x[j] for x in res[k]])), 'vs lean' if k=='fast' else 'vs fastai', ratio_interval([x[j] for x in res[k]], [x[j] for x in res['lean' if k=='fast' else 'fastai']]))
