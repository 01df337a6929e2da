import sys, collections, statistics
d = collections.defaultdict(list); order=[]; benches=[]
cur=None
for line in open(sys.argv[1]):
    if line.startswith('##'):
        _, r, nm, b, n = line.split()[:5]; cur=(nm,b)
        if nm not in order: order.append(nm)
        if b not in benches: benches.append(b)
        continue
    p=line.split()
    if not p or cur is None: continue
    try:
        if len(p)==1: d[(cur[1],'-',cur[0])].append(float(p[0]))
        else: d[(cur[1],int(p[0]),cur[0])].append(float(p[1]))
    except ValueError: pass
for b in benches:
    sizes=sorted({k[1] for k in d if k[0]==b}, key=lambda x: -1 if x=='-' else x)
    print(f"### {b}\n| size | "+" | ".join(order)+" |")
    for s in sizes:
        print(f"| {s} | "+" | ".join(f"{statistics.median(d[(b,s,o)]):.2f}" if d.get((b,s,o)) else "-" for o in order)+" |")
