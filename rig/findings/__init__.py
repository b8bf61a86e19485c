"""A paper's claims as data, checked on a campaign's valid runs (docs/findings.md).

model.py reads a findings file (campaigns/findings/seedNNN.yaml); metrics.py names each metric a
claim can use, with its unit, and computes it per run; stats.py holds the seeded bootstrap
tests; evaluate.py turns claims and campaign directories into verdicts; render.py writes them
as a text table, Markdown, the report's rows and the export's table; cli.py is `rig findings`.
"""
