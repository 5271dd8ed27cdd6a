# nmauth quickstart: every route of nmauthd with curl, jq and oathtool
# (Debian: apt-get install curl jq oathtool).
#
# Start the demo server in one terminal, at the root of a clone:
#
#   go run ./cmd/nmauthd serve --dev
#
# It prints the demo accounts as export lines, with their passwords once,
# on an empty database. Paste those lines into another terminal, then run
# this file: bash cmd/nmauthd/testdata/quickstart.sh. It can run again:
# step 0 turns off the TOTP that an earlier run turned on.
# (Delete nmauth.db and nmauth.db.secret to start afresh.)

set -euo pipefail

NMAUTH_URL=${NMAUTH_URL:-http://127.0.0.1:8081}
DEMO_USER=${DEMO_USER:-demo}
DEMO_PASSWORD=${DEMO_PASSWORD:?paste the DEMO_PASSWORD line that nmauthd serve --dev printed}
DEMO_HOST=${DEMO_HOST:-demo-host}
DEMO_HOST_PASSWORD=${DEMO_HOST_PASSWORD:?paste the DEMO_HOST_PASSWORD line that nmauthd serve --dev printed}

# post PATH TOKEN JSON: one POST, failing on an error status.
post() {
  local auth=()
  if [ -n "${2:-}" ]; then auth=(-H "Authorization: Bearer $2"); fi
  curl --silent --show-error --fail-with-body -X POST "$NMAUTH_URL$1" "${auth[@]}" \
    -H 'Content-Type: application/json' --data "$3"
}

# 0. If an earlier run turned TOTP on, the password alone gives only a
#    pre-auth token: turn TOTP off with the master key, as an admin would.
LOGIN=$(jq -n --arg u "$DEMO_USER" --arg pw "$DEMO_PASSWORD" '{username: $u, password: $pw}')
if post /api/users/adm/authenticate "" "$LOGIN" | jq -e '.response.totpRequired' >/dev/null; then
  : "${DEMO_MASTER_KEY:?TOTP is on from an earlier run; paste the DEMO_MASTER_KEY line to turn it off}"
  post "/api/admin/users/$DEMO_USER/totp-reset" "$DEMO_MASTER_KEY" "{}" | jq -er .message
fi

# 1. A host logs in with its id and password, and gets a host token.
HOST_TOKEN=$(post /api/hosts/adm/authenticate "" \
  "$(jq -n --arg id "$DEMO_HOST" --arg pw "$DEMO_HOST_PASSWORD" '{id: $id, password: $pw}')" |
  jq -er .response.authToken)
curl -sS --fail-with-body -H "Authorization: Bearer $HOST_TOKEN" "$NMAUTH_URL/api/whoami"

# 2. The user logs in with a password alone, and gets a user token.
USER_TOKEN=$(post /api/users/adm/authenticate "" "$LOGIN" | jq -er .response.authToken)
curl -sS --fail-with-body -H "Authorization: Bearer $USER_TOKEN" "$NMAUTH_URL/api/whoami"

# 3. The user starts TOTP enrollment: an otpauth URL (also as a QR code
#    for an authenticator app) and a signature that binds it to the user.
ENROLLMENT=$(post "/api/users/$DEMO_USER/auth/init-totp" "$USER_TOKEN" "{}")
OTP_URL=$(printf '%s' "$ENROLLMENT" | jq -er .otp_auth_url)
OTP_SIG=$(printf '%s' "$ENROLLMENT" | jq -er .otp_auth_url_signature)
SECRET=$(printf '%s' "$OTP_URL" | sed -n 's/.*[?&]secret=\([A-Z2-7]*\).*/\1/p')
echo "otpauth URL: $OTP_URL"

# 4. The user completes enrollment with a first code; TOTP is then on, and
#    the answer holds ten single-use recovery codes.
CODE=$(oathtool --totp -b "$SECRET")
post "/api/users/$DEMO_USER/auth/complete-totp" "$USER_TOKEN" \
  "$(jq -n --arg url "$OTP_URL" --arg sig "$OTP_SIG" --arg code "$CODE" \
    '{otp_auth_url: $url, otp_auth_url_signature: $sig, totp: $code}')" |
  jq -er '.response.recoveryCodes[]' | sed 's/^/recovery code: /'

# 5. Now the password alone gives only a pre-auth token...
PRE_AUTH_TOKEN=$(post /api/users/adm/authenticate "" "$LOGIN" | jq -er .response.preAuthToken)

# ...which verify-totp trades with a code for a user token. A code works
# once, and only for a step after the last one used: take the code of the
# next 30-second step, which the server accepts as clock drift (or wait
# for your app to show a new code).
CODE=$(oathtool --totp -b -N "now + 30 seconds" "$SECRET")
USER_TOKEN=$(post "/api/users/$DEMO_USER/auth/verify-totp" "$PRE_AUTH_TOKEN" \
  "$(jq -n --arg code "$CODE" '{totp: $code}')" | jq -er .authToken)
curl -sS --fail-with-body -H "Authorization: Bearer $USER_TOKEN" "$NMAUTH_URL/api/whoami"

# 6. The master key is the other bearer credential (printed by --dev only
#    when it is the well-known default).
if [ -n "${DEMO_MASTER_KEY:-}" ]; then
  curl -sS --fail-with-body -H "Authorization: Bearer $DEMO_MASTER_KEY" "$NMAUTH_URL/api/whoami"
fi
