# %%
import pandas as pd
import numpy as np
import warnings
raw = pd.read_csv(CSV, parse_dates=['data'], dtype={'quantidade': 'int32'},
                  usecols=['data', 'produto', 'regiao', 'quantidade', 'valor'])
raw.dtypes
# %%
raw.head()
# %%
display(raw.tail(3))
raw.sample(5, random_state=42)
# %%
import io
texto = "id,nome\n1,a\n2,b,extra\n3,c\n4,d,e,f\n"
display(pd.read_csv(io.StringIO(texto), on_bad_lines='warn'))
pd.read_csv(io.StringIO(texto))
# %%
na = pd.read_csv(CSV, na_values={'regiao': ['Norte']}, nrows=8)
display(na)
na.isna().sum()
# %%
raw.memory_usage(deep=True)
# %%
raw.describe(include='all')
# %%
# Messy frame built by hand, as an agent does to test its cleaning code
messy = pd.DataFrame({
    'cliente': ['  Ana Souza', 'BRUNO lima ', 'carla M.', None, 'Ana Souza', 'Diego-Alves'],
    'email': ['ana@x.com', 'BRUNO@Y.COM', 'carla@', 'd@z.org', 'ana@x.com', None],
    'cadastro': ['2026-01-05', '25/02/2026', 'ontem', '2026-03-10', '2026-01-05', ''],
    'gasto': ['100.5', '2,300', 'abc', '75', '100.5', None],
})
messy
# %%
messy['cliente'] = messy['cliente'].str.strip().str.title()
messy['email'] = messy['email'].str.lower()
messy['dominio'] = messy['email'].str.extract(r'@([\w.]+)$', expand=False)
messy[['cliente', 'email', 'dominio']]
# %%
display(messy['cliente'].str.split(expand=True))
messy['email'].str.contains('@x', na=False), messy['cliente'].str.len()
# %%
messy['cadastro'] = pd.to_datetime(messy['cadastro'], errors='coerce')
messy['cadastro']
# %%
messy['cadastro'].dt.day_name(), messy['cadastro'].dt.quarter
# %%
print(messy['gasto'].astype(float, errors='ignore').dtype)
messy['gasto'].astype(float)
# %%
messy['gasto'] = pd.to_numeric(messy['gasto'].str.replace(',', '', regex=False), errors='coerce')
messy.dtypes
# %%
messy['gasto'].astype('Int64')
# %%
messy.duplicated(), messy.duplicated(subset=['email'], keep=False).sum()
# %%
clean = messy.drop_duplicates().reset_index(drop=True)
print(clean)
# %%
clean.fillna({'cliente': 'desconhecido', 'gasto': 0})
# %%
s = pd.Series([1.0, np.nan, np.nan, 4.0, np.nan], index=list('abcde'))
s.interpolate(), s.ffill(), s.fillna(s.mean())
# %%
sub = raw[raw['regiao'] == 'Norte']
sub['valor_k'] = sub['valor'] / 1000
sub[['valor', 'valor_k']].head(3)
# %%
def marca_alto(frame, limite):
    alto = frame[frame['valor'] > limite]
    alto['alto'] = True
    return len(alto)
[marca_alto(raw, v) for v in (10_000, 20_000, 40_000)]
# %%
sul = raw[raw['regiao'] == 'Sul']
sul['valor_k'] = sul['valor'] / 1000
marca_alto(sul, 1_000)
# %%
with warnings.catch_warnings():
    warnings.simplefilter('always')
    raw.groupby('regiao').mean()
# %%
raw.groupby('produto').sum().head(3)
# %%
resumo = raw.groupby('regiao').agg(
    total=('valor', 'sum'), media=('valor', 'mean'), pedidos=('valor', 'size'),
    itens=('quantidade', 'sum'))
resumo.round(1)
# %%
multi = raw.groupby('produto').agg({'valor': ['sum', 'mean', 'max'], 'quantidade': ['min', 'max']})
multi.columns
# %%
multi.round(2)
# %%
raw['share'] = raw.groupby('regiao')['valor'].transform(lambda v: v / v.sum())
raw['rank_reg'] = raw.groupby('regiao')['valor'].rank(ascending=False, method='dense')
raw.nlargest(4, 'valor')[['regiao', 'valor', 'share', 'rank_reg']]
# %%
raw.groupby('produto', group_keys=False).apply(lambda g: g.nlargest(1, 'valor'))[['produto', 'valor']]
# %%
raw['faixa'] = pd.cut(raw['valor'], bins=[0, 500, 5000, np.inf], labels=['baixo', 'medio', 'alto'])
raw['quartil'] = pd.qcut(raw['quantidade'], 4, labels=['Q1', 'Q2', 'Q3', 'Q4'], duplicates='drop')
raw['faixa'].value_counts(normalize=True)
# %%
na['regiao'].value_counts(dropna=False)
# %%
pd.crosstab(raw['regiao'], raw['faixa'], normalize='index').round(3)
# %%
raw['trimestre'] = raw['data'].dt.quarter
pd.pivot_table(raw, values='valor', index='regiao', columns='trimestre',
               aggfunc='sum', margins=True, margins_name='Total').round(0)
# %%
largo = resumo.reset_index()[['regiao', 'total', 'itens']]
longo = largo.melt(id_vars='regiao', var_name='metrica', value_name='valor')
longo.head(6)
# %%
metas = pd.DataFrame({'regiao': ['Norte', 'Sul', 'Sudeste', 'Atlantida'],
                      'meta': [50_000, 80_000, 120_000, 1]})
pd.merge(resumo.reset_index(), metas, on='regiao', how='outer', indicator=True)
# %%
inner = resumo.reset_index().merge(metas, on='regiao')
left = resumo.reset_index().merge(metas, on='regiao', how='left')
print(len(inner), len(left))
display(inner, left.tail(2))
# %%
dup_metas = pd.concat([metas, metas.iloc[[0]]], ignore_index=True)
resumo.reset_index().merge(dup_metas, on='regiao', validate='one_to_one')
# %%
resumo.merge(metas, on='cidade')
# %%
raw['cidade']
# %%
extremos = resumo.head(1).append(resumo.tail(1))
pd.concat([raw.head(2), messy.head(2)], keys=['vendas', 'clientes'])
# %%
raw.corr(numeric_only=True).round(3)
# %%
print(resumo.head(3).to_csv())
print(resumo.head(2).to_json(orient='records'))
resumo.head(2).to_json(orient='split', indent=1)
# %%
resumo.to_markdown()
# %%
resumo.round(0).style.format({'total': 'R$ {:,.0f}', 'media': '{:.1f}'})
# %%
print(resumo.round(1))
resumo.round(1)
