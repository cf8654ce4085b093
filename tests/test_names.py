"""Every exported module defines the names its functions and classes read (tools/check_names.py), checked on the
installed package in a fresh interpreter; and the check does catch a planted undefined name."""
import subprocess, sys, textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT/'tools'/'check_names.py'

def _check(*paths):
    p = subprocess.run([sys.executable, str(TOOL), *map(str, paths)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    return p.returncode, p.stdout

def test_package_defines_every_name_it_reads():
    "No fastperf module reads a global it does not define (the `L`/`Path` NameError in fastperf.pipeline was one)"
    rc,out = _check()
    assert rc==0, out
    n = len([p for p in (ROOT/'fastperf').rglob('*.py') if p.name not in ('_modidx.py', '__init__.py') and '__pycache__' not in p.parts])
    assert f"check_names: {n} module(s), 0 undefined name(s)" in out, out

def test_planted_undefined_names_are_reported(tmp_path):
    "A module with undefined names in a function, a comprehension in a class body, a lambda and after `del` fails the check, by name and line"
    mod = tmp_path/'planted.py'
    mod.write_text(textwrap.dedent("""\
        import os
        from pathlib import Path
        x = 1
        def f(a):
            b = [os.sep for _ in range(a)]          # os: imported, fine
            return undefined_one + len(b)           # line 6: planted
        class C:
            y = [x for _ in range(2)]               # line 8: x is deleted below
            def m(self): return lambda: Path(L)     # line 9: L (fastcore's) is not imported here
        def g():
            global z
            z = 3
        def h(): return z, Path, len                # z: bound by g at run time; not reported
        def nested():
            def inner(): return outer_var
            outer_var = 1
            return inner
        try: import not_a_real_module_xyz as opt
        except ImportError: opt = None
        def uses_opt(): return opt                  # bound on both branches: fine
        def ignored(): return magic  # check_names: ignore
        del x
        """))
    rc,out = _check(mod)
    assert rc==1, out
    got = sorted(l.split(': ', 1)[0].rsplit(':', 1)[1]+' '+l.split("'")[1] for l in out.splitlines() if "is not defined" in l)
    assert got==['6 undefined_one', '8 x', '9 L'], out
    assert "check_names: 1 module(s), 3 undefined name(s)" in out

def test_module_that_fails_to_import_is_reported(tmp_path):
    "A module that cannot even be imported fails the check with the error, instead of passing unchecked"
    mod = tmp_path/'broken.py'
    mod.write_text("import os\nraise RuntimeError('boom')\n")
    rc,out = _check(mod)
    assert rc==1 and "importing the module failed: RuntimeError: boom" in out, out
