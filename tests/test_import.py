"""Importing fastperf changes nothing in fastai, fastcore or torch (tools/check_import_effects.py, in fresh processes),
and the check does catch a planted class-level patch."""
import subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT/'tools'/'check_import_effects.py'

def _check(*args, cwd=ROOT):
    p = subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=600, cwd=cwd)
    return p.returncode, p.stdout + p.stderr

def test_import_changes_nothing():
    "fastai's Learner, DataLoader(s), TfmdDL, Callback, fastai.data.load, fastai.torch_core, defaults.callbacks, torch's flags: as they were"
    rc,out = _check()
    assert rc==0 and 'nothing replaced, removed or changed' in out, out

def test_import_changes_nothing_with_distributed():
    "The same with fastai.distributed loaded first: its DistributedTrainer and DistributedDL too"
    rc,out = _check('--with-distributed')
    assert rc==0 and 'nothing replaced, removed or changed' in out, out

def test_planted_patches_are_reported(tmp_path):
    "A module that replaces a Learner method, removes a DataLoader attribute, adds to fastai's default callbacks and flips a torch flag fails the check, by name"
    (tmp_path/'planted.py').write_text(
        "import fastai.learner, fastai.data.load, torch\n"
        "_fit = fastai.learner.Learner.fit\n"
        "def fit(self, *args, **kwargs): return _fit(self, *args, **kwargs)\n"
        "fastai.learner.Learner.fit = fit\n"
        "del fastai.data.load.DataLoader.one_batch\n"
        "import fastai.callback.core\n"
        "fastai.learner.defaults.callbacks = [*fastai.learner.defaults.callbacks, fastai.callback.core.Callback]\n"
        "torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark\n")
    p = subprocess.run([sys.executable, str(TOOL), '--import', 'planted'], capture_output=True, text=True, timeout=600, cwd=ROOT,
                       env={**__import__('os').environ, 'PYTHONPATH': str(tmp_path)})
    out = p.stdout + p.stderr
    assert p.returncode==1, out
    for s in ('REPLACED fastai.learner.Learner.fit', 'REMOVED fastai.data.load.DataLoader.one_batch', 'CHANGED defaults.callbacks',
              'CHANGED torch.cudnn_benchmark'): assert s in out, (s, out)
