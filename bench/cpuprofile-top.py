#!/usr/bin/env python3
"""Where a Node process spent its CPU: the functions with the most self time in a --cpu-prof profile, each with its
two callers. Usage: python3 bench/cpuprofile-top.py DIR [N] (the first *.cpuprofile in DIR)."""
import json,sys,glob,collections
f=sorted(glob.glob(sys.argv[1]+'/*.cpuprofile'))[0]
p=json.load(open(f))
by={n['id']:n for n in p['nodes']}
par={}
for n in p['nodes']:
    for c in n.get('children',[]): par[c]=n['id']
tot=collections.Counter()
for s,dt in zip(p['samples'],p['timeDeltas']):
    n=by[s]; cf=n['callFrame']; q=par.get(s); chain=[]
    while q and len(chain)<2:
        m=by[q]['callFrame']; chain.append(m['functionName'] or '(anon)'); q=par.get(q)
    tot[cf['functionName']+' <- '+' <- '.join(chain)]+=dt
for k,v in tot.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 40): print(round(v/1000), k)
