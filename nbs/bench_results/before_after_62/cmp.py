import pandas as pd, numpy as np, sys
from scipy import stats
B = [f'before{i}' for i in (1,2,3,4,5,6)]; A = [f'after{i}' for i in (5,6)]
def load(d):
    df = pd.read_csv(f'{d}/zoo.csv'); df = df[df.loop.isin(['to_fastperf()','to_fast_inference()'])]
    return df.set_index(['task','phase'])
def rows(dirs, col): return pd.concat([load(d)[col].rename(d) for d in dirs], axis=1)
out = []
for col in ('samples_per_sec','vs_fastai','vs_plain'):
    b,a = np.log(rows(B,col)),np.log(rows(A,col))
    for k in b.index:
        bb,aa = b.loc[k].dropna().values,a.loc[k].dropna().values
        d = aa.mean()-bb.mean(); se = np.sqrt(aa.var(ddof=1)/len(aa)+bb.var(ddof=1)/len(bb))
        df_ = len(aa)+len(bb)-2; t = stats.t.ppf(.975, df_)
        out.append(dict(task=k[0], phase=k[1], measure=col, after_vs_before=np.exp(d), lo=np.exp(d-t*se), hi=np.exp(d+t*se),
                        before=np.exp(bb.mean()), after=np.exp(aa.mean())))
r = pd.DataFrame(out)
order = ['tabular','text','unet','digits_cnn','resnet18','vit','multilabel','collab','lm']
r['o'] = r.task.map(order.index); r = r.sort_values(['measure','o','phase']).drop(columns='o')
pd.set_option('display.width', 200)
print(r.to_string(index=False, float_format=lambda v: f'{v:,.3f}' if v<100 else f'{v:,.0f}'))
r.to_csv('before_after.csv', index=False)
