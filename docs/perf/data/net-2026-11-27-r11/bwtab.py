import collections,statistics,sys
d=collections.defaultdict(list); lab=None
for l in open(sys.argv[1]):
    if l.startswith('## '): lab=l.split()[2]; continue
    p=l.split()
    if p and p[0]=='put_bw': d[(lab,int(p[1]))].append(float(p[2]))
labs=sorted({k[0] for k in d}); sizes=sorted({k[1] for k in d})
print('size', *labs)
for s in sizes: print(s, *[f"{statistics.median(d[(l,s)]):.0f}[{min(d[(l,s)]):.0f}-{max(d[(l,s)]):.0f}]" for l in labs])
