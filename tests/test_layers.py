"""fastperf's modules import no private name of another fastperf module, their imports (inside functions too) form no
circle, and the runtime modules import no measuring module (tools/check_layers.py); and the check fails on each fault
planted in a copy of the package."""
import shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT/'tools'/'check_layers.py'

def _check(*args):
    p = subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    return p.returncode, p.stdout

def test_package_layers_hold():
    rc,out = _check()
    assert rc==0, out
    assert out.strip().endswith('0 finding(s)'), out

def test_planted_faults_are_reported(tmp_path):
    pkg = tmp_path/'fastperf'
    shutil.copytree(ROOT/'fastperf', pkg, ignore=shutil.ignore_patterns('__pycache__'))
    rc,out = _check(pkg)
    assert rc==0, out # the copy is as clean as the package
    with open(pkg/'cast.py', 'a') as f: f.write("\nfrom fastperf.core import _exit_depth\n")       # a private name
    with open(pkg/'rules.py', 'a') as f: f.write("\ndef _late():\n    import fastperf.recommend\n")  # rules -> recommend -> rules, hidden in a function
    with open(pkg/'cudnn.py', 'a') as f: f.write("\ndef _t():\n    from .measure.bench import bench\n")  # a runtime module importing a benchmark
    with open(pkg/'optim.py', 'a') as f: f.write("\nimport fastperf.core\nx = fastperf.core._RESTORING\n")  # a private attribute read
    with open(pkg/'measure'/'parity.py', 'a') as f: f.write("\nfrom ..core import _exit_depth as e2\n")  # a relative import from a subpackage
    with open(pkg/'channelslast.py', 'a') as f: f.write("\nfrom .timer import ThroughputTimer\n")  # a module from a later notebook
    rc,out = _check(pkg)
    assert rc==1, out
    assert "cast.py" in out and "private name '_exit_depth' imported from fastperf.core" in out, out
    assert "import circle among" in out and "recommend" in out and "rules" in out, out
    assert "runtime module cudnn imports the measuring module measure.bench" in out, out
    assert "private name '_RESTORING' read from fastperf.core" in out, out
    assert "parity.py" in out and out.count("private name '_exit_depth' imported from fastperf.core")==2, out
    assert "channelslast (03_channelslast.ipynb) imports timer, whose notebook 09_timer.ipynb comes later" in out, out
