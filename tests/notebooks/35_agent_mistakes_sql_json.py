# %%
import pandas as pd
import numpy as np
vendas = pd.read_csv(CSV, sep=';')
vendas.shape, list(vendas.columns)
# %%
vendas['valor']
# %%
vendas = pd.read_csv(CSV, encoding='utf-16')
# %%
vendas = pd.read_csv(CSV, delimiter=',', encoding='latin-1', parse_dates=['data'])
vendas.groupby('Regiao')['valor'].sum()
# %%
vendas.groupby('regiao')['valor'].sum().sort_values(ascending=False)
# %%
vendas.sort_values('Valor')
# %%
vendas.valr.mean()
# %%
vendas['valor'].means()
# %%
vendas.regiao.str.upperr()
# %%
vendas['preco_unitario'] + vendas['produto']
# %%
vendas['quantidade'].astype('int8').astype('datetime64[ns]')
# %%
np.log(vendas['produto'])
# %%
vendas[['quantidade', 'valor']].values @ vendas[['quantidade', 'valor']].values
# %%
a = vendas['valor'].values.reshape(-1, 4)
# %%
np.arange(12).reshape(3, 4) + np.arange(3)
# %%
np.arange(12).reshape(3, 4) + np.arange(3)[:, None]
# %%
metas = pd.DataFrame({'Regiao': ['Norte', 'Sul'], 'meta': [1000, 2000]})
vendas.merge(metas, on='regiao')
# %%
vendas.merge(metas, left_on='regiao', right_on='Regiao', how='left')[['regiao', 'Regiao', 'meta']].drop_duplicates().head()
# %%
vendas['quantidade'].apply(lambda q: 100 / (q - vendas['quantidade'].min()))
# %%
vendas['zero'] = 0
vendas.apply(lambda r: r['valor'] // r['zero'], axis=1).head(3)
# %%
vendas.apply(lambda r: r['valor'] / r['zerro'], axis=1)
# %%
vendas.iloc[1000]
# %%
vendas.iloc[:, 12]
# %%
vendas.loc[vendas['valor'] > 1000, 'valor_k']
# %%
linhas = vendas.head(5).to_dict('records')
[r['preco'] * r['quantidade'] for r in linhas]
# %%
[round(r['preco_unitario'] * r['quantidade'], 2) for r in linhas]
# %%
def ticket_medio(df, coluna):
    grupos = df.groupby(coluna)
    return {k: g['valor'].sum() / len(g[g['quantidade'] > 100]) for k, g in grupos}
ticket_medio(vendas, 'regiao')
# %%
pd.to_datetime(pd.Series(['2026-01-05', '05/02/2026', '31/02/2026', 'amanhã']))
# %%
pd.to_datetime(pd.Series(['2026-01-05', '2026-02-30', 'amanhã', None]), errors='coerce', format='%Y-%m-%d')
# %%
pd.to_datetime('2026-13-01', format='%Y-%m-%d')
# %%
import sqlite3
con = sqlite3.connect(':memory:')
cur = con.cursor()
cur.execute('CREATE TABLE pedidos (id INTEGER PRIMARY KEY, cliente TEXT NOT NULL, total REAL, criado TEXT)')
cur.executemany('INSERT INTO pedidos (cliente, total, criado) VALUES (?, ?, ?)',
                [('Ana', 120.5, '2026-01-02'), ('Bruno', 99.9, '2026-01-03'), ('Ana', 15.0, '2026-02-10'), ('Zoë', None, '2026-02-11')])
con.commit()
cur.execute('SELECT cliente, COUNT(*), SUM(total) FROM pedidos GROUP BY cliente ORDER BY cliente').fetchall()
# %%
cur.execute('SELECT * FROM pedido')
# %%
cur.execute('INSERT INTO pedidos (cliente) VALUES (?)', (None,))
# %%
cur.execute('SELECT cliente FROM pedidos WHERE total > ?', 100)
# %%
cur.execute('SELECT * FROM pedidos LIMIT 1'), cur.description, cur.fetchone(), cur.rowcount
# %%
pd.read_sql('SELECT cliente, SUM(total) AS total, MIN(criado) AS primeiro FROM pedidos GROUP BY cliente', con)
# %%
pd.read_sql_query('SELECT * FROM pedidos', con, index_col='id', parse_dates=['criado'])
# %%
vendas.head(20).to_sql('vendas', con, index=False)
pd.read_sql('SELECT regiao, COUNT(*) n, ROUND(AVG(valor), 2) media FROM vendas GROUP BY regiao', con)
# %%
vendas.head(2).to_sql('vendas', con, index=False)
# %%
con.row_factory = sqlite3.Row
row = con.execute('SELECT * FROM pedidos WHERE id = 1').fetchone()
row, row.keys(), dict(row), tuple(row)
# %%
import json
api = '''[{"id": 1, "cliente": {"nome": "Ana", "endereco": {"cidade": "Recife", "uf": "PE"}}, "itens": [{"sku": "A1", "qtd": 2}, {"sku": "B7", "qtd": 1}]},
          {"id": 2, "cliente": {"nome": "Bruno", "endereco": {"cidade": "Natal"}}, "itens": []}]'''
dados = json.loads(api)
pd.json_normalize(dados)
# %%
pd.json_normalize(dados, record_path='itens', meta=['id', ['cliente', 'nome']], sep='_')
# %%
pd.json_normalize(dados, record_path='pedidos')
# %%
json.loads(api.replace('"id": 2', "'id': 2"))
# %%
json.loads('{"a": 1,}')
# %%
json.dumps({'total': np.int64(5)})
# %%
json.dumps({'total': int(np.int64(5)), 'media': float(np.float64(2.5)), 'nan': float('nan')})
# %%
peq = vendas[['produto', 'quantidade', 'valor']].head(3)
for orient in ['split', 'records', 'index', 'columns', 'values', 'table']:
    print(orient, peq.to_json(orient=orient)[:120])
# %%
from io import StringIO
pd.read_json(StringIO(peq.to_json(orient='split')), orient='split'), pd.read_json(StringIO(peq.to_json(orient='records', lines=True)), lines=True)
# %%
pd.read_json(StringIO(peq.to_json(orient='records')), orient='index')
# %%
import pickle
blob = pickle.dumps({'modelo': 'v1', 'pesos': np.arange(3.0), 'df': peq})
volta = pickle.loads(blob)
type(blob), volta['pesos'], volta['df'].equals(peq)
# %%
pickle.dumps(lambda x: x)
# %%
pickle.loads(b'not a pickle')
# %%
peq.to_pickle('peq.pkl')
pd.read_pickle('peq.pkl')
# %%
import re
from collections import Counter
avaliacoes = pd.Series(['Ótimo produto!!! Chegou RÁPIDO, nota 10/10', 'Péssimo... veio quebrado. Nota: 2/10',
                        'bom custo-benefício; entrega em 3 dias', None, 'NOTA 8/10 - recomendo, recomendo!'])
avaliacoes.str.extract(r'(?i)nota:?\s*(\d+)/(\d+)')
# %%
avaliacoes.str.extractall(r'(\d+)')
# %%
avaliacoes.str.contains(r'recomend|ótimo', case=False, regex=True)
# %%
avaliacoes[avaliacoes.str.contains('nota', case=False)]
# %%
avaliacoes.str.split(r'[,;.!]+\s*', expand=True, regex=True)
# %%
def limpa(t):
    t = t.lower()
    t = re.sub(r'[^\w\s]', ' ', t)
    return re.sub(r'\s+', ' ', t).strip()
[limpa(t) for t in avaliacoes]
# %%
palavras = Counter(w for t in avaliacoes.dropna() for w in limpa(t).split() if len(w) > 2)
palavras.most_common(5), palavras['recomendo'], palavras['inexistente']
# %%
palavras + Counter({'nota': 5}), palavras - Counter({'nota': 10}), sum(palavras.values())
# %%
re.findall(r'(\d+)/(\d+', 'nota 10/10')
# %%
con.close()
cur.execute('SELECT 1')
