"The `fastperf-images` command as users run it: the installed command in a fresh process on a small photo folder, the table and the files it writes."
import json, subprocess, sys
import pandas as pd, pytest
from fastperf.measure.data import photo_folder

def test_images_cli(tmp_path):
    folder,out = photo_folder(tmp_path/'photos', n_train=16, n_valid=8, size=(160,120)),tmp_path/'out'
    r = subprocess.run(['fastperf-images', '--folder', str(folder), '--size', '64', '--bs', '8', '--epochs', '2', '--rounds', '2', '--out', str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode==0, r.stdout[-3000:]+r.stderr[-3000:]
    assert 'Warning' not in r.stderr, r.stderr[-2000:] # a user's first line is the tool's
    assert sorted(p.name for p in out.iterdir())==['images.csv', 'images.json']
    df = pd.read_csv(out/'images.csv')
    assert set(df.pipeline)=={'fastai','fastperf','fastperf, decoded on disk','torchvision'} and set(df.epoch)=={'first','cached'} and set(df.split)=={'train','valid'}
    assert (df.img_per_sec>0).all() and (df[df.pipeline=='fastai'].vs_fastai==1).all()
    js = json.loads((out/'images.json').read_text())
    assert js['settings']['rounds']==2 and 'torch' in js['env']
    assert 'fastperf vs fastai' in r.stdout and 'wrote' in r.stdout

@pytest.mark.parametrize('args,msg', [(['--epochs','1'], '--epochs must be >= 2'), (['--workers','-1'], '--workers must be >= 0'),
                                      (['--folder','/nonexistent'], 'no train/ folder')]
                         + ([(['--decode-device','cuda'], 'torch sees no CUDA device')] if not __import__('torch').cuda.is_available() else []))
def test_images_bad_arguments(tmp_path, args, msg, capsys):
    "Bad input: one error line, exit code 2, nothing written (checked in this process; the installed command once, below)"
    from fastperf.measure.images import main
    out = tmp_path/'never'
    with pytest.raises(SystemExit) as e: main([*args, '--out', str(out)])
    err = capsys.readouterr().err
    assert e.value.code==2 and msg in err and 'Traceback' not in err, err
    assert not out.exists()

def test_images_bad_argument_installed(tmp_path):
    "The installed command answers a bad argument with its one error line and exit code 2"
    r = subprocess.run(['fastperf-images', '--epochs', '1', '--out', str(tmp_path/'never')], capture_output=True, text=True, timeout=120)
    assert r.returncode==2 and '--epochs must be >= 2' in r.stderr and 'Traceback' not in r.stderr, r.stderr
    assert not (tmp_path/'never').exists()
