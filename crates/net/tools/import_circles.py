#!/usr/bin/env python3
"""Import circles between the files of a crate: `python3 crates/net/tools/import_circles.py crates/net/src`.

Parses every `use crate::...`, `use super::...`, `use self::...` and child-module `use` line (test
modules left out), follows `pub use` re-exports to the file that defines the item, and prints
every strongly connected group of files (two files importing each other, directly or around a
loop). Exits 1 if there is one."""
import os,re,sys
root=sys.argv[1]  # crates/net/src
mods={}  # module path tuple -> file
for d,_,fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p=os.path.join(d,f); rel=os.path.relpath(p,root)[:-3].split(os.sep)
        if rel==['lib']: m=()
        elif rel[-1]=='mod': m=tuple(rel[:-1])
        else: m=tuple(rel)
        mods[m]=p
def resolve(path):
    # longest known module prefix
    for k in range(len(path),-1,-1):
        if tuple(path[:k]) in mods: return tuple(path[:k])
def expand(tree):
    # 'a::{b, c::{d}}' -> list of paths
    tree=tree.strip()
    m=re.match(r'^(.*?)\{(.*)\}$',tree,re.S)
    if not m: return [tree]
    pre,inner=m.group(1),m.group(2)
    parts=[];depth=0;cur=''
    for ch in inner:
        if ch==',' and depth==0: parts.append(cur);cur=''
        else:
            depth+= ch=='{'; depth-= ch=='}'; cur+=ch
    parts.append(cur)
    out=[]
    for p in parts:
        if p.strip(): out+= [pre+x for x in expand(p.strip())]
    return out
def paths_of(m,p,src):
    out=[]
    for pub,u in re.findall(r'^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);',src,re.M):
        for path in expand(u):
            segs=[s.strip() for s in path.split('::')]
            if segs[0]=='crate': base=[];segs=segs[1:]
            elif segs[0] in('super','self'):
                base=list(m)
                while segs and segs[0] in ('super','self'):
                    if segs[0]=='super': base=base[:-1]
                    segs=segs[1:]
            elif tuple(list(m)+[segs[0]]) in mods: base=list(m)
            else: continue
            segs=[x.split(' as ')[0].strip() for x in segs]
            out.append((bool(pub),base+segs))
    return out
srcs={m:re.split(r'#\[cfg\(test\)\]\s*mod tests',open(p).read())[0] for m,p in mods.items()}
# re-exports: (module, name) -> full path
reexp={}
for m,p in mods.items():
    for pub,path in paths_of(m,p,srcs[m]):
        if pub: reexp[(m,path[-1])]=path
def target(path):
    t=resolve(path)
    if t is None: return None
    rest=path[len(t):]
    if rest and (t,rest[0]) in reexp and reexp[(t,rest[0])]!=path:
        return target(reexp[(t,rest[0])])
    return t
edges={}
for m,p in mods.items():
    edges[m]={t for _,path in paths_of(m,p,srcs[m]) for t in [target(path)] if t is not None and t!=m}
# Tarjan SCC
idx={};low={};st=[];on=set();sccs=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v: break
        if len(comp)>1: sccs.append(comp)
for v in mods:
    if v not in idx: sc(v)
for comp in sccs:
    print('CIRCLE:', ' '.join(os.path.relpath(mods[x],root) for x in comp))
print(len(mods),'files,',sum(len(e) for e in edges.values()),'imports,',len(sccs),'circles')
sys.exit(1 if sccs else 0)
