"The `fastperf-zoo` command as users run it: the installed command in a fresh process, one quick task, the table and the files it writes."
import json, subprocess, sys
import pandas as pd, pytest

def test_zoo_cli_one_task(tmp_path):
    out = tmp_path/'zoo'
    r = subprocess.run(['fastperf-zoo', '--tasks', 'tabular', '--rounds', '2', '--threads', '1', '--out', str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode==0, r.stdout[-3000:]+r.stderr[-3000:]
    assert 'Warning' not in r.stderr, r.stderr[-2000:] # a user's first line is the tool's
    assert sorted(p.name for p in out.iterdir())==['zoo.csv', 'zoo.json', 'zoo.png', 'zoo_decisions.csv', 'zoo_losses.csv']
    assert (out/'zoo.png').read_bytes()[:8]==b'\x89PNG\r\n\x1a\n' # the plot (`plot_zoo`), a PNG
    sp = pd.read_csv(out/'zoo.csv').set_index(['phase','loop'])
    assert set(sp.index)=={('train','fastai defaults'), ('train','to_fastperf()'), ('train','plain loop'),
                           ('infer','fastai defaults'), ('infer','to_fast_inference()'), ('infer','plain loop'),
                           ('infer','to_fastperf() + to_fast_inference(), after a validation pass'),
                           ('predict','fastai defaults'), ('predict','to_fastperf()'), ('predict','plain forward'),
                           ('predict','to_fastperf() + to_fast_inference(), after a validation pass'),
                           ('predict','learn.predictor(), after a validation pass')}
    assert (sp.samples_per_sec>0).all() and (sp.rounds==2).all()
    assert sp.loc[('train','fastai defaults'),'vs_fastai']==1 and sp.loc[('train','plain loop'),'vs_plain']==1 and sp.loc[('predict','plain forward'),'vs_plain']==1
    dec = pd.read_csv(out/'zoo_decisions.csv').iloc[0]
    assert dec.task=='tabular' and dec.optimizer=='TorchOptimizer' and bool(dec.lean_tabular)
    los = pd.read_csv(out/'zoo_losses.csv').iloc[0]
    assert bool(los.ok) and los.max_diff<1e-4
    js = json.loads((out/'zoo.json').read_text())
    assert js['env']['rounds']==2 and 'torch' in js['env']
    assert 'one call vs plain' in r.stdout and 'to_fastperf()' in r.stdout and 'predictor() vs fastai' in r.stdout and 'wrote' in r.stdout

def test_zoo_cli_no_train(tmp_path):
    "`--no-train`: inference and predict alone, no plot with `--no-plots` (the text classifier's recurrent model: fastperf's notes to a user stay out of the benchmark's output)"
    out = tmp_path/'zoo'
    r = subprocess.run(['fastperf-zoo', '--tasks', 'tabular', 'text', '--rounds', '1', '--no-train', '--no-losses', '--no-plots', '--out', str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode==0, r.stdout[-3000:]+r.stderr[-3000:]
    assert 'Warning' not in r.stderr, r.stderr[-2000:]
    sp = pd.read_csv(out/'zoo.csv')
    assert set(sp.phase)=={'infer', 'predict'} and set(sp.task)=={'tabular', 'text'} and (sp.samples_per_sec>0).all()
    assert not (out/'zoo.png').exists() and 'zoo.png' not in r.stdout # --no-plots
    assert not (out/'zoo_losses.csv').exists() and 'zoo_losses.csv' not in r.stdout # --no-losses: no table, no empty file
    assert 'zoo_decisions.csv' in r.stdout

@pytest.mark.parametrize('args,msg', [(['--tasks','nope'], 'unknown task(s) nope'), (['--rounds','0'], '--rounds must be >= 1'),
                                      (['--threads','0'], '--threads must be >= 1'),
                                      (['--tasks','lm','--no-train'], 'nothing to time: without training')])
def test_zoo_bad_arguments(tmp_path, args, msg, capsys):
    "Bad input: one error line, exit code 2, nothing written (checked in this process; the installed command once, below)"
    from fastperf.measure.zoo import main
    out = tmp_path/'never'
    with pytest.raises(SystemExit) as e: main([*args, '--out', str(out)])
    err = capsys.readouterr().err
    assert e.value.code==2 and msg in err and 'Traceback' not in err, err
    assert not out.exists()

def test_zoo_bad_argument_installed(tmp_path):
    "The installed command answers a bad argument with its one error line and exit code 2"
    r = subprocess.run(['fastperf-zoo', '--rounds', '0', '--out', str(tmp_path/'never')], capture_output=True, text=True, timeout=120)
    assert r.returncode==2 and '--rounds must be >= 1' in r.stderr and 'Traceback' not in r.stderr, r.stderr
    assert not (tmp_path/'never').exists()
