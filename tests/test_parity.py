"The `fastperf-parity` command as users run it: a fresh process, a tiny configuration, the table and files it writes."
import shutil, json, signal, subprocess, sys, time
import pandas as pd, pytest


def _default_sigint():
    "In the child: SIGINT's default disposition, which a shell's background job ignores (Python then installs no KeyboardInterrupt handler)"
    signal.signal(signal.SIGINT, signal.SIG_DFL)

def _run(tmp_path, *args):
    out = tmp_path/'par'
    cmd = [shutil.which('fastperf-parity'), # the installed command, as users run it
           '--device', 'cpu', '--quick', '--out', str(out), '--threads', '1', *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    return r,out

def test_parity_cli_tiny(tmp_path):
    r,out = _run(tmp_path, '--no-lightning', '--sync-free', 'on') # (the sync-free rows forced on the CPU)
    assert r.returncode==0, r.stdout[-3000:]+r.stderr[-3000:]
    assert 'Warning' not in r.stderr, r.stderr[-2000:] # a user's first line is the tool's: no deprecation warning from importing fastai
    assert sorted(p.name for p in out.iterdir())==['parity.csv', 'parity.json', 'parity_losses.csv']
    df = pd.read_csv(out/'parity.csv')
    assert {'phase','loop','img/s','img/s min','img/s max','vs fastai defaults','vs plain (same features)','plain twin','rounds'} <= set(df.columns)
    tr = df[df.phase=='train'].set_index('loop')
    assert {'fastai defaults', 'fastai + to_fastperf()', 'plain PyTorch (fp32)'} <= set(tr.index)
    assert (df['img/s']>0).all() and (df['img/s min']<=df['img/s']).all() and (df['img/s']<=df['img/s max']).all()
    assert (df['rounds']==2).all()
    # each loop's own ratio is 1; a ratio is a median of per-round ratios of the measured numbers
    assert tr.loc['fastai defaults','vs fastai defaults']==1.0 and tr.loc['plain PyTorch (fp32)','vs plain (same features)']==1.0
    f = tr.loc['fastai + to_fastperf()']
    assert f['plain twin'].startswith('plain PyTorch') and 0.05 < f['vs plain (same features)'] < 20
    assert set(df[df.phase=='infer']['loop']) >= {'get_preds, fastai defaults', 'plain eval loop (fp32)'}
    assert {'fastai + to_fastperf() + NoSyncLoss', 'get_preds + to_fast_inference(defer=True)'} <= set(df.loop), df.loop.tolist()
    js = json.loads((out/'parity.json').read_text())
    checks = {c['pair']:c for c in js['loss_checks']}
    c = checks['fastai defaults vs plain PyTorch (fp32)']
    assert c['ok'] and c['steps']==3 and c['tol']==1e-3 and c['max_diff']<=1e-3 and c['first_step_diff']==0
    assert len(c['losses'])==3 and all(l>0 for l in c['losses'])
    assert any(k.startswith('fastai + to_fastperf() vs ') and v['ok'] for k,v in checks.items())
    assert all(c['ok'] for c in js['loss_checks']), js['loss_checks']
    assert any('Lightning: skipped' in n for n in js['notes'])
    ls = pd.read_csv(out/'parity_losses.csv')
    assert len(ls)==3*3 and set(ls.columns)=={'pair','step','loss','plain_loss'} # three pairs: defaults, to_fastperf(), with NoSyncLoss
    assert 'ok' in r.stdout and 'wrote' in r.stdout

PBAD = [['--steps','0'], ['--bs','-1'], ['--arch','nosuchnet'], ['--device','tpu'], ['--threads','-1'], ['--size','0'],
        ['--arch','list_models'], ['--num-workers','-1'], ['--device','meta']]

def test_bad_arguments_exit_2(tmp_path, capsys):
    "Bad input is one error line and exit code 2 before anything runs (not a traceback, not after the whole run)"
    from fastperf.measure.parity import main
    f = tmp_path/'a_file'; f.write_text('x')
    for args in PBAD + [['--out', str(f)]]:
        out = tmp_path/'never'
        with pytest.raises(SystemExit) as e: main(['--device', 'cpu', '--quick', '--out', str(out), *args])
        assert e.value.code==2, args
        err = [l for l in capsys.readouterr().err.splitlines() if l.startswith('fastperf-parity: error:')]
        assert len(err)==1, (args, err)
        assert not out.exists(), args

def test_interrupt_is_one_line(tmp_path):
    "Ctrl-C during a run: one line on stderr that says nothing was written, exit code 130, no traceback"
    out = tmp_path/'par'
    cmd = [sys.executable, '-u', '-c', 'import sys; from fastperf.measure.parity import main; sys.exit(main())',
           '--device', 'cpu', '--quick', '--no-lightning', '--rounds', '50', '--out', str(out), '--threads', '1']
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    first = p.stdout.readline() # the machine line: the run has started
    assert first, p.stderr.read()
    time.sleep(3); p.send_signal(signal.SIGINT)
    _,err = p.communicate(timeout=120)
    assert p.returncode==130, err[-2000:]
    assert 'interrupted' in err and 'Traceback' not in err, err[-2000:]
    assert not any(out.iterdir())
