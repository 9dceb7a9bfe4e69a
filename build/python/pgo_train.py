# The bench's python rows (bench/python.go: the loop, csv.reader and
# csv.DictReader with a Counter) on a 30,000-line CSV, for the PGO profile
# (build/python/pgo.sh runs it after CPython's PGO task).
import csv, collections, json, re, sys, tempfile, os
keys = ["alpha", "beta", "gamma", "delta", "omega"]
x = 7
lines = []
for i in range(30000):
    x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
    lines.append("%d,%s,%d\n" % (i, keys[(x >> 28) % 5], (x >> 20) % 1000))
d = tempfile.mkdtemp()
p = os.path.join(d, "data.csv")
with open(p, "w") as f:
    f.writelines(lines)
s = 0
for i in range(1000000):
    s += i * i % 7
print(s)
t = collections.Counter()
with open(p, newline='') as f:
    for row in csv.reader(f):
        t[row[1]] += int(row[2])
print(sorted(t.items()))
t = collections.Counter()
with open(p, newline='') as f:
    for row in csv.DictReader(f, fieldnames=('id', 'key', 'value')):
        t[row['key']] += int(row['value'])
print(sorted(t.items()))
os.remove(p); os.rmdir(d)
