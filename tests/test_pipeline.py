"""`lean_pipelines` as users meet them, with the installed package in fresh processes: the same batches as fastai's own
pipelines on image files (the items taken without `TfmdLists.__getitem__`); a Learner exported with lean pipelines, and the lean DataLoaders pickled whole, load and work
where fastperf cannot be imported."""
import json, subprocess, sys, textwrap

def _folder(n:int, h:int, w:int)->str:
    "Script lines that import what the scripts use and write `n` noisy red and blue PNGs of `h`x`w` per class and split under `sys.argv[1]`"
    return textwrap.dedent(f'''
    import json, sys, warnings
    from pathlib import Path
    warnings.filterwarnings('ignore')
    import numpy as np, torch, PIL.Image
    from PIL import Image
    from fastai.vision.all import *
    from fastperf.all import *
    torch.set_num_threads(1)
    root = Path(sys.argv[1])
    rng = np.random.default_rng(0)
    for split in ('train','valid'):
        for c,col in (('red',(200,20,20)),('blue',(20,20,200))):
            (root/split/c).mkdir(parents=True, exist_ok=True)
            for i in range({n}):
                a = np.clip(np.array(col)+rng.integers(-20, 20, ({h},{w},3)), 0, 255).astype(np.uint8)
                Image.fromarray(a).save(root/split/c/f'{{i}}.png')
    ''')

_WRITE = _folder(6, 24, 24) + textwrap.dedent(r'''
from torchvision.models import resnet18
from fastperf.copies import LeanPipeline
def dls():
    set_seed(0)
    db = DataBlock(blocks=(ImageBlock, CategoryBlock), get_items=get_image_files, splitter=GrandparentSplitter(),
                   get_y=parent_label, item_tfms=Resize(16), batch_tfms=Normalize.from_stats(*imagenet_stats))
    return db.dataloaders(root, bs=4, num_workers=0, shuffle=False)
def batches(d):
    set_seed(1); return [b for b in d.train] + [b for b in d.valid]
plain,lean = dls(),dls()
wrapped = lean_pipelines(lean)
same = all(type(u) is type(v) and torch.equal(u, v) for a,b in zip(batches(plain), batches(lean)) for u,v in zip(a, b))
learn = Learner(lean, resnet18(num_classes=2), loss_func=CrossEntropyLossFlat(), path=root)
learn.export('lean.pkl')
import pickle
(root/'dls.pkl').write_bytes(pickle.dumps(lean)) # the DataLoaders themselves, lean pipelines and all (as spawned workers get them)
from fastai.data.core import TfmdLists
calls,_getitem = [],TfmdLists.__getitem__
def counted(self, i): calls.append(i); return _getitem(self, i)
TfmdLists.__getitem__ = counted
lean.valid.do_item(0); n_lean = len(calls); plain.valid.do_item(0)
TfmdLists.__getitem__ = _getitem
xb = lean.valid.one_batch()[0]
from fastai.data.load import DataLoader
fastai_own = DataLoader.__dict__['create_item'].__code__.co_filename.endswith('data/load.py') # fastai's class keeps its own
print(json.dumps(dict(same=same, n_wrapped=len(wrapped), tl_calls=[n_lean, len(calls)-n_lean], lean_type=type(lean.train.after_item).__name__,
                      own_item=['create_item' in dl.__dict__ for dl in lean.loaders], fastai_own=fastai_own,
                      pred=learn.predict(root/'valid'/'red'/'0.png')[2].tolist(), xb=xb.sum().item())))
''')

_LOAD = textwrap.dedent(r'''
import json, sys, warnings
warnings.filterwarnings('ignore')
sys.modules['fastperf'] = None # `import fastperf` raises: the export must not need it
from pathlib import Path
from fastai.vision.all import *
root = Path(sys.argv[1])
learn = load_learner(root/'lean.pkl')
import pickle
dls = pickle.loads((root/'dls.pkl').read_bytes())
types = sorted({type(p).__module__ for dl in dls.loaders for p in (dl.after_item, dl.before_batch, dl.after_batch, *[tl.tfms for tl in dl.dataset.tls])})
from fastai.data.load import DataLoader
print(json.dumps(dict(pred=learn.predict(root/'valid'/'red'/'0.png')[2].tolist(), modules=types, xb=dls.valid.one_batch()[0].sum().item(),
                      fastai_item=[getattr(dl.create_item, '__func__', None) is DataLoader.create_item for dl in dls.loaders],
                      fastperf_loaded=any(m.startswith('fastperf') for m in sys.modules if sys.modules[m] is not None))))
''')

def _run(script, *args):
    r = subprocess.run([sys.executable, '-c', script, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode==0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])

def test_lean_batches_and_export_without_fastperf(tmp_path):
    w = _run(_WRITE, str(tmp_path))
    assert w['same'], "lean pipelines changed a batch"
    assert w['n_wrapped']>=6 and w['lean_type']=='LeanPipeline'
    assert w['own_item']==[True, True] and w['fastai_own'] # the lean `create_item` is the loaders' own attribute, not fastai's class's
    assert w['tl_calls']==[0, 2] # the lean loader takes the image and label items directly; fastai's indexes both TfmdLists
    r = _run(_LOAD, str(tmp_path))
    assert not r['fastperf_loaded']
    assert r['modules']==['fasttransform.transform'] # the pickled lean pipelines come back as fastai's own Pipeline
    assert r['fastai_item']==[True, True] # and the loaders' lean `create_item` as fastai's own method
    assert abs(r['xb']-w['xb'])<=1e-3*abs(w['xb'])
    assert max(abs(a-b) for a,b in zip(r['pred'], w['pred']))<1e-5

_IMPORT = textwrap.dedent(r'''
import json, warnings
warnings.filterwarnings('ignore')
import fastai.data.load as L, fastai.data.core as C
def fns(): return (L.DataLoader.__dict__['create_item'], C.DataLoaders.__dict__['test_dl'], L.to_device)
a = fns()
import fastperf.pipeline, fastperf.copies
b = fns()
print(json.dumps(dict(same=[x is y for x,y in zip(a, b)], files=[f.__code__.co_filename.split('site-packages/')[-1] for f in b])))
''')

def test_import_leaves_fastai_alone():
    "Importing `fastperf.pipeline` and `fastperf.copies` replace none of fastai's `DataLoader.create_item`, `DataLoaders.test_dl`, `fastai.data.load.to_device`"
    r = _run(_IMPORT)
    assert r['same']==[True, True, True], r
    assert r['files']==['fastai/data/load.py', 'fastai/data/core.py', 'fastai/torch_core.py'], r
