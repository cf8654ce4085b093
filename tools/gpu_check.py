"""The whole GPU check in one command (issue 14): install offline, run the `#| cuda` notebooks, the parity benchmark,
the timer check and `fastperf-bench` (and, asked for with `--only zoo` or `--only workflows`, the task zoo or the workflow suite), then bundle the results into at most 8 files and print a short summary.

    tools/gpu_check.sh [OUT] [--cpu] [--only STEP ...] [--budget SECONDS] ...      (see --help)

OUT: $OUT when set (the device tool returns that folder), else the argument, else ./gpu_check_out. Each step runs in
its own process with its own time limit, inside a total budget; a failed or timed-out step is recorded and the next
one runs. On a machine without CUDA (or with --cpu) it says what it skips and runs every step's logic on tiny CPU
configurations: the install as a dry run, parity and bench tiny, the timer check on the CPU clock, bundling, summary.
Only the standard library is imported here: fastai, nbdev and fastperf are only needed by the steps, after install."""
import argparse, csv, glob, json, os, re, shlex, shutil, signal, subprocess, sys, tarfile, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEPS = ('env', 'install', 'parity', 'timer', 'bench', 'notebooks', 'zoo', 'workflows')
OPT_IN = ('zoo', 'workflows') # steps that run only when named in --only: each takes much of a device call
LIMITS = dict(env=60, install=150, parity=240, timer=90, bench=240, notebooks=520, zoo=300, workflows=520) # seconds each (capped by what is left of the budget)
ZOO_TASKS = ('tabular', 'digits_cnn', 'text', 'vit', 'multilabel', 'resnet18', 'unet') # the cheapest first: a step stopped at its limit keeps what ran
GPU_ARGS = dict(parity='--device cuda',
                bench='--device cuda --models resnet50 --bs 128 --size 224 --features channels_last precision --precision fp32 bf16 '
                      '--steps 15 --warmup 5 --no-plots --timeout 120',
                timer='--device cuda', zoo='--rounds 3 --defer')
CPU_ARGS = dict(parity='--device cpu --quick --threads 2 --rounds 1 --loss-steps 2',
                bench='--device cpu --models small_cnn --features none --bs 8 --size 32 --steps 2 --warmup 1 --no-plots --threads 1 --timeout 60',
                timer='--device cpu --pairs 1 --steps 4 --warmup 1', zoo='--rounds 1 --no-infer --threads 2')
WHEEL_PLATFORMS = ['manylinux_2_28_x86_64', 'manylinux_2_17_x86_64', 'manylinux2014_x86_64'] # as ../shared/device/wheels.sh
PY = sys.executable
PARITY_CMD = [PY, '-c', 'import sys; from fastperf.measure.parity import main; sys.exit(main())']
BENCH_CMD = [PY, '-c', 'import sys; from fastperf.measure.bench import main; sys.exit(main())']
ZOO_CMD = [PY, '-c', 'import sys; from fastperf.measure.zoo import main; sys.exit(main())']

def cuda_notebooks(nbs_dir=REPO/'nbs')->list:
    "Notebooks with at least one code cell tagged `#| cuda`"
    res = []
    for f in sorted(Path(nbs_dir).glob('*.ipynb')):
        try: cells = json.loads(f.read_text())['cells']
        except (OSError, ValueError, KeyError): continue
        src = lambda c: ''.join(c['source']) if isinstance(c['source'], list) else c['source']
        if any(c['cell_type']=='code' and re.search(r'^#\|\s*cuda\b', src(c), re.M) for c in cells): res.append(f)
    return res

class Check:
    def __init__(self, a):
        self.a,self.t0 = a,time.monotonic()
        self.out = Path(os.environ.get('OUT') or a.out or 'gpu_check_out').resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(a.work or tempfile.mkdtemp(prefix='gpu_check_')).resolve()
        (self.work/'logs').mkdir(parents=True, exist_ok=True)
        self.site = Path(a.site or (self.work/'site')).resolve()
        self.results,self.skipped,self.extra = [],[],{}
        self.env = dict(os.environ, PYTHONUNBUFFERED='1', MPLBACKEND='Agg',
                        PYTHONPATH=os.pathsep.join([str(REPO), str(self.site)] + ([os.environ['PYTHONPATH']] if os.environ.get('PYTHONPATH') else [])),
                        PATH=os.pathsep.join([str(self.site/'bin'), os.environ.get('PATH', '')]))
        self.gpu = False

    def say(self, *a): print(*a, flush=True)
    def left(self)->float: return self.a.budget - (time.monotonic()-self.t0) - 20 # keep 20 s for the bundle

    def run(self, step, cmd, limit=None, log=None, cwd=REPO, env=None)->dict:
        "Run `cmd` in its own process group with a time limit; record and return the outcome"
        left = self.left()
        limit = min(limit or LIMITS.get(step, 60), left)
        log = log or self.work/'logs'/f'{step}.log'
        if left<10 or limit<=0:
            r = dict(step=step, status='not run', seconds=0., note=f'out of time (budget {self.a.budget:.0f} s)', log=str(log.relative_to(self.work)))
            self.results.append(r); self.say(f"[{step}] not run: out of time"); return r
        self.say(f"[{step}] {' '.join(shlex.quote(str(c)) for c in cmd)[:300]}  (limit {limit:.0f} s)")
        t = time.monotonic()
        with open(log, 'a') as f:
            f.write(f"$ {' '.join(shlex.quote(str(c)) for c in cmd)}\n"); f.flush()
            p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, cwd=cwd, env=dict(self.env, **(env or {})), start_new_session=True)
            try: rc,status = p.wait(timeout=limit),None
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGTERM) # the step's own process group: its workers too
                try: p.wait(timeout=10)
                except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL); p.wait()
                rc,status = None,'timeout'
        secs = time.monotonic()-t
        status = status or ('ok' if rc==0 else 'FAILED')
        tail = [l for l in Path(log).read_text(errors='replace').splitlines() if l.strip() and 'warn' not in l.lower()][-1:] if status!='ok' else []
        r = dict(step=step, status=status, rc=rc, seconds=round(secs, 1), log=str(Path(log).relative_to(self.work)),
                 note=(f"killed after {limit:.0f} s" if status=='timeout' else tail[0][-200:] if tail else ''))
        self.results.append(r)
        self.say(f"[{step}] {status} in {secs:.0f} s" + (f": {r['note']}" if r['note'] else ''))
        return r

    def record(self, step, status, note, seconds=0.):
        self.results.append(dict(step=step, status=status, seconds=seconds, note=note, log=''))
        self.say(f"[{step}] {status}: {note}")

    # --- steps --------------------------------------------------------------------------------------------------------
    def step_env(self):
        code = ("import json, platform, torch; d = dict(python=platform.python_version(), torch=torch.__version__, cuda=torch.version.cuda, "
                "cuda_available=torch.cuda.is_available(), device=torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor() or platform.machine(), "
                "cpus=__import__('os').cpu_count()); print('ENV', json.dumps(d))")
        r = self.run('env', [PY, '-c', code])
        txt = (self.work/'logs'/'env.log').read_text(errors='replace')
        m = re.search(r'^ENV (.*)$', txt, re.M)
        self.extra['env'] = json.loads(m.group(1)) if m else {}
        if shutil.which('nvidia-smi'):
            sm = subprocess.run(['nvidia-smi', '--query-gpu=name,memory.total,driver_version', '--format=csv,noheader'], capture_output=True, text=True)
            self.extra['env']['nvidia_smi'] = sm.stdout.strip()
        cuda = self.extra['env'].get('cuda_available', False)
        if self.a.cpu: self.gpu = False
        elif self.a.gpu and not cuda: self.record('mode', 'FAILED', '--gpu asked for but torch sees no CUDA device'); self.gpu = False
        else: self.gpu = bool(cuda)
        mode = 'GPU' if self.gpu else 'CPU'
        self.say(f"mode: {mode} ({self.extra['env'].get('device', '?')}, torch {self.extra['env'].get('torch', '?')})")
        if not self.gpu:
            self.skipped += ["install: dry run only (nothing is installed on a CPU)",
                             "notebooks: `nbdev-test --flags cuda --save` is not run (no GPU); the notebooks with `#| cuda` cells are listed",
                             "parity: the GPU configuration (ResNet-50, 224px, channels-last, bf16, device data, Lightning) is replaced by `--quick` on CPU",
                             "bench: the GPU subset of the default sweep is replaced by one tiny CPU configuration",
                             "timer: the CUDA-event timer and sync=True are not checked; the CPU clock path is"]

    def _importable(self, mods)->bool:
        return subprocess.run([PY, '-c', f"import {', '.join(mods)}"], env=self.env, capture_output=True, cwd=REPO).returncode==0

    def step_install(self):
        wheels = Path(self.a.wheels).resolve()
        whls = sorted(glob.glob(str(wheels/'*.whl')))
        pip_wheels = [PY, '-m', 'pip', 'install', '-q', '--no-index', '--no-deps', '--no-compile', '--no-cache-dir', '--upgrade', '--target', self.site, *whls]
        pip_self = [PY, '-m', 'pip', 'install', '-q', '--no-index', '--no-deps', '--no-build-isolation', '--no-compile', '--target', self.site, REPO]
        names = {}
        for w in whls: names.setdefault(Path(w).name.split('-')[0].lower().replace('_','-'), []).append(Path(w).name)
        dups = {k:v for k,v in names.items() if len(v)>1}
        self.extra['wheels'] = dict(folder=str(wheels), count=len(whls), duplicates=dups)
        if dups: self.record('install', 'FAILED', f"two versions of {', '.join(dups)} in {wheels}: keep one (pip stops on both)"); return
        if not self.gpu:
            log = self.work/'logs'/'install.log'
            log.write_text("dry run (CPU mode): the GPU run would execute\n  " + ' '.join(map(shlex.quote, map(str, pip_wheels[:14]))) +
                           f" {wheels}/*.whl\n  " + ' '.join(map(shlex.quote, map(str, pip_self))) + '\n')
            if not whls:
                self.record('install', 'ok', f"dry run: no wheels in {wheels} (a GPU run needs them: ../shared/device/wheels.sh {wheels.name})"); return
            plat = [x for p in WHEEL_PLATFORMS for x in ('--platform', p)]
            # the carried wheels resolve for the GPU image's Python (3.12, manylinux x86-64) without an index
            self.run('install', [PY, '-m', 'pip', 'install', '--dry-run', '-q', '--no-index', '--no-deps', '--ignore-installed', '--target',
                                 self.work/'dryrun', '--python-version', '3.12', '--implementation', 'cp', '--only-binary=:all:', *plat, *whls])
            return
        if self._importable(['fastai', 'nbdev', 'fastperf', 'execnb']):
            self.record('install', 'ok', 'fastai, nbdev and fastperf already importable: nothing to install'); return
        if not whls: self.record('install', 'FAILED', f"fastai/nbdev missing and no wheels in {wheels}: run ../shared/device/wheels.sh and carry it"); return
        r = self.run('install', pip_wheels)
        if r['status']!='ok': return
        r = self.run('install', pip_self, limit=60) # console scripts (fastperf-bench, fastperf-parity); the steps import the tree anyway
        if r['status']!='ok': r['status'],r['note'] = 'ok',f"fastperf not pip-installed ({r['note']}); the steps import it from the tree"
        if not self._importable(['fastai', 'nbdev', 'fastperf']): self.record('install', 'FAILED', 'fastai, nbdev or fastperf still not importable after the install')

    def _args(self, step): return shlex.split(getattr(self.a, f'{step}_args') if getattr(self.a, f'{step}_args') is not None else (GPU_ARGS if self.gpu else CPU_ARGS)[step])

    def step_parity(self): self.run('parity', [*PARITY_CMD, '--out', self.work/'parity', *self._args('parity')])
    def step_timer(self): self.run('timer', [PY, REPO/'tools'/'gpu_check_timer.py', self.work/'timer', *self._args('timer')])
    def step_bench(self): self.run('bench', [*BENCH_CMD, '--out', self.work/'bench', *self._args('bench')])

    def step_zoo(self):
        "`fastperf-zoo`, one process per task (a task that fails or runs out of time loses only itself), then one `zoo.csv`, `zoo_losses.csv`, `zoo_decisions.csv`"
        args = self._args('zoo')
        tasks = list(ZOO_TASKS)
        if '--tasks' in args: # --zoo-args '--tasks a b ...' chooses them
            i = args.index('--tasks'); j = next((k for k in range(i+1, len(args)) if args[k].startswith('--')), len(args))
            tasks,args = args[i+1:j],args[:i]+args[j:]
        t = time.monotonic()
        for task in tasks:
            rem = LIMITS['zoo']-(time.monotonic()-t)
            if rem<5: self.record('zoo', 'not run', f"{task}: the zoo step's {LIMITS['zoo']:.0f} s are spent"); continue
            r = self.run('zoo', [*ZOO_CMD, '--tasks', task, '--out', self.work/'zoo'/task, *args], limit=rem, log=self.work/'logs'/f'zoo_{task}.log')
            r['notebook'] = task # (the summary's second column: which task)
        for f in ('zoo.csv', 'zoo_losses.csv', 'zoo_decisions.csv'):
            parts = [self.work/'zoo'/task/f for task in tasks if (self.work/'zoo'/task/f).exists()]
            if not parts: continue
            lines = [open(parts[0]).readline()] + [l for p in parts for l in open(p).readlines()[1:]]
            (self.work/'zoo'/f).write_text(''.join(lines))

    def step_notebooks(self):
        nbs = [REPO/'nbs'/n if '/' not in n else Path(n).resolve() for n in self.a.notebooks] if self.a.notebooks else cuda_notebooks()
        self.extra['cuda_notebooks'] = [n.name for n in nbs]
        nbt = self.site/'bin'/'nbdev-test'
        base = [nbt] if nbt.exists() else [shutil.which('nbdev-test')] if shutil.which('nbdev-test') else [PY, '-c', 'from nbdev.test import nbdev_test; nbdev_test()']
        if not self.gpu:
            self.record('notebooks', 'skipped', f"no GPU; would run `nbdev-test NB --flags cuda --save --n-workers 1` on: {', '.join(n.name for n in nbs)}"); return
        (self.work/'notebooks').mkdir(exist_ok=True)
        t = time.monotonic()
        for nb in nbs:
            r = self.run('notebooks', [*base, nb, '--flags', 'cuda', '--save', '--n-workers', '1', '--do-print'],
                         limit=min(self.a.nb_limit, LIMITS['notebooks']-(time.monotonic()-t)), log=self.work/'logs'/f'nb_{nb.stem}.log')
            r['notebook'] = nb.name
            if r['status']=='ok': shutil.copy2(nb, self.work/'notebooks'/nb.name) # outputs saved by nbdev-test --save

    def step_workflows(self):
        "tests/test_workflows.py: every fastperf callback in every fastai entry point, in fresh processes, on this machine's device (all sessions on a GPU; on a CPU, where CI runs them all, the `tasks` one or those FASTPERF_WORKFLOWS names)"
        self.run('workflows', [PY, '-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', REPO/'tests'/'test_workflows.py'],
                 env=dict(FASTPERF_WORKFLOW_PROCS=str(max(2, min(7, (os.cpu_count() or 2)//2)))) if self.gpu else dict(FASTPERF_WORKFLOWS=os.environ.get('FASTPERF_WORKFLOWS') or 'tasks'))

    # --- bundle and summary -----------------------------------------------------------------------------------------
    def bundle(self)->list:
        tops = []
        def top(src, name):
            if Path(src).exists(): shutil.copy2(src, self.out/name); tops.append(name)
        top(self.work/'parity'/'parity.csv', 'parity.csv')
        top(self.work/'bench'/'results.csv', 'bench_results.csv')
        top(self.work/'timer'/'timer.csv', 'timer.csv')
        top(self.work/'zoo'/'zoo.csv', 'zoo.csv')
        self.summary_md = self.summary()
        (self.work/'summary.md').write_text(self.summary_md)
        tar = self.out/'gpu_check.tar.gz'
        with tarfile.open(tar, 'w:gz') as tf:
            for p in sorted(self.work.iterdir()):
                if p.name not in ('site', 'dryrun'): tf.add(p, arcname=p.name)
        tops.append(tar.name)
        (self.out/'summary.md').write_text(self.summary_md); tops.append('summary.md')
        js = dict(mode='gpu' if self.gpu else 'cpu', steps=self.results, skipped=self.skipped, seconds=round(time.monotonic()-self.t0, 1),
                  budget=self.a.budget, files=sorted(tops+['summary.json']), bundle_bytes=tar.stat().st_size, **self.extra)
        (self.out/'summary.json').write_text(json.dumps(js, indent=1, default=str)); tops.append('summary.json')
        return tops

    def _csv_md(self, f, cols=None, fmt=None, n=30)->str:
        if not Path(f).exists(): return '(none)\n'
        rows = list(csv.DictReader(open(f)))
        if not rows: return '(empty)\n'
        cols = [c for c in (cols or rows[0].keys()) if c in rows[0]]
        def cell(v):
            try: x = float(v); return f"{x:,.0f}" if abs(x)>=100 else f"{x:.3g}"
            except (TypeError, ValueError): return v
        lines = ['| ' + ' | '.join(cols) + ' |', '|' + '---|'*len(cols)] + ['| ' + ' | '.join(cell(r.get(c, '')) for c in cols) + ' |' for r in rows[:n]]
        return '\n'.join(lines) + ('\n' if len(rows)<=n else f'\n... {len(rows)-n} more rows\n')

    def summary(self)->str:
        e = self.extra.get('env', {})
        s = [f"# fastperf GPU check ({'GPU' if self.gpu else 'CPU mode: GPU steps skipped'})", '',
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; device: {e.get('nvidia_smi') or e.get('device', '?')}; torch {e.get('torch','?')} "
             f"(CUDA {e.get('cuda')}); Python {e.get('python','?')}; {e.get('cpus','?')} CPUs; {time.monotonic()-self.t0:.0f} s of a {self.a.budget:.0f} s budget.", '',
             '| step | status | seconds | note |', '|---|---|---|---|']
        for r in self.results: s.append(f"| {r['step']}{' '+r['notebook'] if r.get('notebook') else ''} | {r['status']} | {r['seconds']} | {r.get('note','').replace('|','/')} |")
        if self.skipped: s += ['', 'Skipped or replaced (no GPU):', *[f"- {x}" for x in self.skipped]]
        s += ['', '## Parity', '', self._csv_md(self.work/'parity'/'parity.csv', ['phase','loop','img/s','img/s min','img/s max','vs fastai defaults','vs plain (same features)'])]
        pj = self.work/'parity'/'parity.json'
        if pj.exists():
            for ch in json.loads(pj.read_text()).get('loss_checks', []):
                s.append(f"- {'ok' if ch['ok'] else 'FAIL'} {ch['pair']}: " + (f"max |loss diff| {ch['max_diff']:.1e} of the first loss (tol {ch['tol']:g}; a rounding step's reach {ch.get('noise') or 0:.1e}; {ch['steps']} steps)"
                         if ch.get('steps') else f"max |prob diff| {ch['max_abs_prob_diff']:.1e}, argmax agree {ch['argmax_agree']:.1%}"))
        s += ['', '## Timer', '', self._csv_md(self.work/'timer'/'timer.csv', ['case','timer / outside clock','with timer / without','with / without min','with / without max','timing'])]
        if (self.work/'zoo'/'zoo.csv').exists():
            s += ['', '## Task zoo', '', self._csv_md(self.work/'zoo'/'zoo.csv', ['task','phase','loop','samples_per_sec','vs_fastai','vs_plain'], n=40)]
            if (self.work/'zoo'/'zoo_losses.csv').exists():
                s += [f"- {'ok' if r['ok']=='True' else 'FAIL'} losses {r['task']} ({r['precision']}): max {float(r['max_diff']):.1e} of the first loss, a rounding step's reach {float(r['noise'] or 0):.1e}"
                      for r in csv.DictReader(open(self.work/'zoo'/'zoo_losses.csv'))]
        bc = self.work/'bench'/'results.csv'
        s += ['', '## fastperf-bench', '', f"{sum(1 for _ in open(bc))-1} rows in bench_results.csv" if bc.exists() else '(no results.csv)']
        wl = self.work/'logs'/'workflows.log'
        if wl.exists():
            lines = [l for l in wl.read_text(errors='replace').splitlines() if re.search(r'\b(passed|failed|error)', l)]
            s += ['', '## Workflow suite', '', *(['- ' + l.strip() for l in lines[-6:]] or ['(no pytest summary line in logs/workflows.log)'])]
        s += ['', f"Files: summary.md, summary.json, gpu_check.tar.gz (logs/, notebooks/ with saved outputs, parity/, bench/, timer/) and the top-level CSVs.", '']
        return '\n'.join(s)

def parse(argv=None):
    p = argparse.ArgumentParser(prog='tools/gpu_check.sh', description=__doc__.split('\n\n')[0],
                                epilog="Put the output folder first: --only, --skip, --notebooks and --limit take every word after them.")
    p.add_argument('out', nargs='?', help="output folder ($OUT wins when set; default ./gpu_check_out)")
    p.add_argument('--cpu', action='store_true', help="CPU mode even where a GPU is present")
    p.add_argument('--gpu', action='store_true', help="fail the check when torch sees no GPU")
    p.add_argument('--only', nargs='+', choices=STEPS[1:], help=f"run only these steps (env always runs; {', '.join(OPT_IN)} only when named here)")
    p.add_argument('--skip', nargs='+', choices=STEPS[1:], default=[], help="skip these steps")
    p.add_argument('--budget', type=float, default=540, help="seconds for the whole check (the device tool allows 600 per command)")
    p.add_argument('--wheels', default=str(REPO/'.whl'), help="folder of wheels made by ../shared/device/wheels.sh")
    p.add_argument('--site', help="install target, put on PYTHONPATH (default: inside the work folder)")
    p.add_argument('--work', help="scratch folder (default: a new temporary folder)")
    p.add_argument('--notebooks', nargs='+', help="notebooks to run (default: every nbs/*.ipynb with a `#| cuda` cell)")
    p.add_argument('--nb-limit', type=float, default=240, help="seconds per notebook")
    p.add_argument('--limit', nargs='+', default=[], metavar='STEP=SECONDS', help=f"time limits per step instead of the defaults {LIMITS}")
    for s in ('parity', 'bench', 'timer', 'zoo'): p.add_argument(f'--{s}-args', help=f"arguments for the {s} step instead of the defaults (GPU: {GPU_ARGS[s]!r})")
    a = p.parse_args(argv)
    if a.budget<60: p.error("--budget must be at least 60 seconds")
    for kv in a.limit:
        k,_,v = kv.partition('=')
        if k not in LIMITS or not v.replace('.','',1).isdigit(): p.error(f"--limit takes STEP=SECONDS with STEP one of {', '.join(LIMITS)}, got {kv!r}")
        LIMITS[k] = float(v)
    return a

def main(argv=None):
    a = parse(argv)
    c = Check(a)
    c.say(f"gpu_check: results to {c.out}, scratch in {c.work}, budget {a.budget:.0f} s")
    c.step_env()
    for s in STEPS[1:]:
        if (a.only and s not in a.only) or s in a.skip: c.record(s, 'skipped', 'not asked for (--only/--skip)'); continue
        if s in OPT_IN and not a.only: c.record(s, 'skipped', f'runs in a call of its own: tools/gpu_check.sh --only {s}'); continue
        try: getattr(c, f'step_{s}')()
        except Exception as e: c.record(s, 'FAILED', f"gpu_check error: {type(e).__name__}: {e}")
    files = c.bundle()
    print('\n' + c.summary_md)
    print(f"{len(files)} files in {c.out}: {', '.join(sorted(files))}")
    bad = [r for r in c.results if r['status'] in ('FAILED', 'timeout')]
    return 1 if bad else 0

if __name__=='__main__': sys.exit(main())
