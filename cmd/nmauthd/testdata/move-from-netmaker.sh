# Moving the accounts of a Netmaker v1.4.0 server to nmauth, as
# docs/moving-from-netmaker.md tells it, with nmauthd on PATH, in the
# directory where nmauth.db is to be (Debian: apt-get install curl).
#
# NETMAKER_DB is Netmaker's database: a copy of its SQLite file taken while
# its server was stopped, or a postgres:// URL. MASTER_KEY is Netmaker's
# master key, from its netmaker.env. NMAUTHD_ADDR is where step 5 serves.

set -euo pipefail
: "${NETMAKER_DB:?Netmaker's database: the copy of its netmaker.db, or a postgres:// URL}"
: "${MASTER_KEY:?Netmaker's MASTER_KEY, from its netmaker.env}"
export MASTER_KEY
NMAUTHD_ADDR=${NMAUTHD_ADDR:-127.0.0.1:8081}

# 3. See the plan: nothing is written.
nmauthd import netmaker --from "$NETMAKER_DB" --db nmauth.db --dry-run

# 4. Import: each account is one write, and a second run adds nothing.
nmauthd import netmaker --from "$NETMAKER_DB" --db nmauth.db

# 5. Serve in Netmaker's bytes, with Netmaker's master key.
nmauthd serve --wire netmaker --db nmauth.db --addr "$NMAUTHD_ADDR" &
SERVER=$!
trap 'kill $SERVER' EXIT
until curl -sf "http://$NMAUTHD_ADDR/readyz" >/dev/null; do sleep 0.2; done

# 6. Check: the accounts are there, and the master key is accepted.
nmauthd user list --db nmauth.db
nmauthd host list --db nmauth.db
curl -sS --fail-with-body -H "Authorization: Bearer $MASTER_KEY" "http://$NMAUTHD_ADDR/api/whoami"
