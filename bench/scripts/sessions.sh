#!/bin/bash
# sessions.sh BIN HOG MAXSESSIONS [serve flags...]: start `BIN serve`, then
# create sessions one by one, each running the worst script at its caps
# (its filesystem filled to the quota, four commands growing to their
# 256 MiB limit at once), until a create or a run gets 503 (or
# MAXSESSIONS). Prints per session the status and the server's RSS. HOG is
# testdata/guests/hog built for wasip1:
#   (cd testdata/guests/hog && GOOS=wasip1 GOARCH=wasm go build -o /tmp/hog.wasm .)
# Run it under a watchdog: timeout 1500 bench/scripts/sessions.sh ...
# It starts serve with a compile cache of its own (the first run compiles).
set -u
BIN=$1; HOG=$2; MAX=$3; shift 3
D=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
WASMBOX_ENGINE=off "$BIN" --cachedir "$D/cache" serve --listen 127.0.0.1:$PORT --max-sessions 1000 --workers 2 "$@" >"$D/serve.out" 2>"$D/serve.err" &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$D"' EXIT
for i in $(seq 1 200); do grep -q serving "$D/serve.out" && break; sleep 0.5; done
U=http://127.0.0.1:$PORT
rss() { awk '/VmRSS|VmHWM/{printf "%s %d MiB  ", $1, $2/1024}' /proc/$SPID/status; }
SCRIPT='head -c 250M /dev/urandom > /tmp/fill; ls -l /tmp/fill | wc -l; for i in 1 2 3 4; do /tmp/hog 240 > /dev/null 2>&1 & done; wait; echo ok'
echo "start: $(rss)"
for n in $(seq 1 $MAX); do
  code=$(curl -s -o "$D/c.json" -w '%{http_code}' -X POST $U/v1/sessions)
  if [ "$code" != 201 ]; then echo "session $n: create $code $(cat "$D/c.json") Retry-After: $(curl -s -D - -o /dev/null -X POST $U/v1/sessions | grep -i retry-after | tr -d '\r')"; echo "at refusal: $(rss)"; break; fi
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$D/c.json")
  curl -s -o /dev/null -X PUT --data-binary @"$HOG" "$U/v1/sessions/$id/files?path=/tmp/hog"
  curl -s -X POST -d '{"script":"chmod +x /tmp/hog"}' $U/v1/sessions/$id/run >/dev/null
  code=$(curl -s -o "$D/r.json" -w '%{http_code}' -X POST -d "{\"script\":\"$SCRIPT\",\"timeout_ms\":300000}" $U/v1/sessions/$id/run)
  res=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("exit_code"), d.get("error_class"), repr(d.get("stdout",""))[:40], repr(d.get("stderr",""))[:160]) if "exit_code" in d else print(d)' "$D/r.json")
  echo "session $n: run $code $res | $(rss)"
  if [ "$code" = 503 ]; then echo "at refusal: $(rss)"; break; fi
done
