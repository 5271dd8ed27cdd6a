#!/usr/bin/env bash
# wrk-turns.sh measures what Require(KindUser) costs a route over HTTP: it
# starts each given nmauth-load binary with -serve, logs the user in, and in
# each turn runs wrk on GET /app/open (the route bare) and GET /app/users
# (the same route behind Require), on every server in turn (ABAB), the two
# routes in alternating order from one turn to the next. Per turn and
# server it prints the rate of users over open and the server's CPU time per
# request (ns, summed over its threads from /proc) of each route; at the end
# the medians. The servers run on CPU $SERVER_CPU and wrk on $WRK_CPU, so
# that wrk does not take the server's core.
#
#	go build -o /tmp/load-a ./cmd/nmauth-load   # at one commit
#	go build -o /tmp/load-b ./cmd/nmauth-load   # at another
#	cmd/nmauth-load/wrk-turns.sh -n 10 -d 2s /tmp/load-a /tmp/load-b
#
# It needs wrk, curl, jq and taskset, and stops every server it started.
set -euo pipefail

turns=8 dur=2s
while getopts n:d: opt; do
	case $opt in
	n) turns=$OPTARG ;;
	d) dur=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if (($# == 0)); then
	echo "usage: $0 [-n turns] [-d duration] nmauth-load..." >&2
	exit 2
fi
bins=("$@")
server_cpu=${SERVER_CPU:-0} wrk_cpu=${WRK_CPU:-1}
NMAUTH_LOAD_PASSWORD=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
export NMAUTH_LOAD_PASSWORD
work=$(mktemp -d)
pids=() addrs=() tokens=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

for i in "${!bins[@]}"; do
	taskset -c "$server_cpu" "${bins[$i]}" -serve 127.0.0.1:0 -user alice >"$work/serve.$i" 2>&1 &
	pids+=($!)
	addr=
	for _ in $(seq 100); do
		addr=$(sed -n 's|^serving the memory store on http://||p' "$work/serve.$i")
		[[ -n $addr ]] && break
		sleep 0.1
	done
	[[ -n $addr ]] || { cat "$work/serve.$i" >&2; exit 1; }
	addrs+=("$addr")
	token=$(curl -sf -H 'Content-Type: application/json' \
		-d "{\"username\":\"alice\",\"password\":\"$NMAUTH_LOAD_PASSWORD\"}" \
		"http://$addr/api/users/adm/authenticate" | jq -r .response.authToken)
	tokens+=("$token")
	# The token cache takes a token on its second check.
	for _ in 1 2 3; do
		curl -sf -o /dev/null -H "Authorization: Bearer $token" "http://$addr/app/users"
	done
done

cputime() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# run I PATH prints the rate of server I on PATH and its CPU ns per request.
run() {
	local c0 c1 out
	c0=$(cputime "${pids[$1]}")
	out=$(taskset -c "$wrk_cpu" wrk -t1 -c16 -d"$dur" -H "Authorization: Bearer ${tokens[$1]}" "http://${addrs[$1]}$2")
	c1=$(cputime "${pids[$1]}")
	echo "$out" | awk -v cpu=$((c1 - c0)) '
		/requests in/ { n = $1 }
		/Requests\/sec/ { rate = $2 }
		END { printf "%s %.0f\n", rate, cpu / n }'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $(seq "$turns"); do
	for i in "${!bins[@]}"; do
		if ((t % 2)); then
			read -r orate ocpu < <(run "$i" /app/open)
			read -r urate ucpu < <(run "$i" /app/users)
		else
			read -r urate ucpu < <(run "$i" /app/users)
			read -r orate ocpu < <(run "$i" /app/open)
		fi
		awk -v t="$t" -v b="${bins[$i]}" -v ur="$urate" -v or="$orate" -v uc="$ucpu" -v oc="$ocpu" 'BEGIN {
			printf "turn %d %s: users/open %.3f (%.0f/%.0f per s), CPU per request open %d ns, users %d ns, open/users %.3f\n",
				t, b, ur / or, ur, or, oc, uc, oc / uc }'
	done
done | tee "$work/turns"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# median prints the median, the least and the greatest of the numbers it
# reads, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { printf "%.3f (%.3f to %.3f)", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2, v[1], v[NR] }'
}
for b in "${bins[@]}"; do
	echo "$b: median users/open $(awk -v b="$b:" '$3 == b { print $5 }' "$work/turns" | median)," \
		"median CPU open/users $(awk -v b="$b:" '$3 == b { print $NF }' "$work/turns" | median)"
done
