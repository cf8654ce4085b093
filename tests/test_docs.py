"The documentation builds offline from the notebooks and renders in headless Chromium."
import os, re, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {'index.html': ['fastperf', 'Run the tests', 'fastperf-bench', 'samples/s'],
         'cast.html': ['CastToTensor', 'cast_to_tensor', 'tensor subclass'],
         'measure_features.html': ['cast_benchmark', 'compile_benchmark']}

def _chromium():
    return next((p for p in map(shutil.which, ('chromium', 'chromium-browser', 'google-chrome')) if p), None)

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp('site')
    subprocess.run([sys.executable, 'tools/build_docs.py', '--out', str(out), '--no-readme'], cwd=ROOT, check=True)
    return out

def test_pages_built(site):
    names = {p.name for p in site.glob('*.html')}
    nbs = {p.stem.split('_',1)[-1]+'.html' for p in (ROOT/'nbs').glob('*.ipynb') if p.stem!='index'} | {'index.html'}
    assert nbs <= names, f"missing pages: {nbs-names}"
    for page,words in PAGES.items():
        text = (site/page).read_text()
        for w in words: assert w in text, f"{w!r} not in {page}"
    assert 'data:image/png' in (site/'measure_data.html').read_text(), "the synthetic-data page lost its plots"
    for page in names:  # training tables as a terminal leaves them: no progress-bar redraws, no fastprogress markers
        assert '█' not in (site/page).read_text(), f"progress-bar text on {page}"
    assert 'epoch     train_loss' in (site/'index.html').read_text()
    for page in names: # no warning fastai's code raises about ours, no traceback, nothing documented twice
        text = (site/page).read_text()
        assert 'You are shadowing' not in text and 'Traceback (most recent call last)' not in text, page
        heads = [re.sub(r'<[^>]+>|¶', '', h).strip() for h in re.findall(r'<h3[^>]*>(.*?)</h3>', text, re.S)]
        assert len(heads)==len(set(heads)), (page, sorted(h for h in heads if heads.count(h)>1))
    cast = re.sub(r'<[^>]+>', '', (site/'cast.html').read_text()) # a class's signature says class, a function's def
    assert 'class CastToTensor(' in cast and 'def cast_to_tensor(' in cast and 'def CastToTensor(' not in cast

def test_terminal_text():
    sys.path.insert(0, str(ROOT/'tools'))
    from build_docs import _terminal
    bar = '█\repoch     train_loss  time    \n█\r\rEpoch 1/1 : |█████-----| 50.00% [1/2 00:00<00:00]\rEpoch 1/1 :     \r0         1.25    00:01     \n'
    assert _terminal(bar)=='epoch     train_loss  time\n0         1.25    00:01\n'
    assert _terminal(' |████------| 40.00% [2/5 00:01<00:02]') == ''  # a bar caught mid-redraw
    assert _terminal('plain line\n') == 'plain line\n'

def _browser(*args):
    exe = _chromium()
    if exe is None:
        if os.environ.get('CI'): pytest.fail("Chromium is not installed (.ci/run installs Debian's chromium package)")
        pytest.skip("Chromium is not installed: apt-get install chromium")
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync',
             '--disable-background-networking', '--disable-component-update', '--hide-scrollbars']
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=180)

@pytest.mark.parametrize('page', list(PAGES))
def test_renders_in_chromium(site, page, tmp_path):
    url = (site/page).as_uri()
    dom = _browser(f'--user-data-dir={tmp_path/"profile"}', '--dump-dom', url).stdout
    for w in PAGES[page]: assert w in dom, f"{w!r} missing from the rendered {page}"
    assert 'class="fp-nav"' in dom and 'cast.html' in dom
    shot = tmp_path/'shot.png'
    _browser(f'--user-data-dir={tmp_path/"profile2"}', f'--screenshot={shot}', '--window-size=1200,1600', url)
    from PIL import Image, ImageStat
    img = Image.open(shot).convert('L')
    assert img.size==(1200,1600) and ImageStat.Stat(img).stddev[0] > 5, "the screenshot is blank"
