#!/bin/sh
# Runs ceph/s3-tests against a fresh Plateau (see ../CONFORMANCE.md).
# usage: run.sh <plateau binary> <s3-tests checkout> <venv> [pytest args...]
# The checkout and the venv (boto3, pytest and the suite's requirements)
# live outside the repository, under /tmp.
set -eu
bin=$(realpath "$1"); suite=$(realpath "$2"); venv=$(realpath "$3"); shift 3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/plateau-s3tests.XXXXXX)
token=plt_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
export PLATEAU_DATA_DIR="$work/data" PLATEAU_LOG=warn
# A lifecycle day of 10 s, as the suite expects of RGW's rgw_lc_debug_interval.
export PLATEAU_STORAGE_LIFECYCLE_DAY_MS=10000 PLATEAU_STORAGE_LIFECYCLE_EVERY_MS=2000
PLATEAU_LISTEN=127.0.0.1:0 PLATEAU_EDGE_LISTEN=127.0.0.1:0 PLATEAU_STORAGE_LISTEN=127.0.0.1:0 \
PLATEAU_BOOTSTRAP_TOKEN="$token" PLATEAU_ADMIN_PASSWORD=conformance-operator \
    "$bin" serve > "$work/serve.log" 2>&1 &
pid=$!
# The data plane outlives `serve`: its agent (pid in the data directory)
# is stopped too.
trap 'kill $pid 2>/dev/null || true; agent=$(cat "$work/data/agent/pid" 2>/dev/null) && [ -n "$agent" ] && kill "$agent" 2>/dev/null || true' EXIT
until api=$(sed -n 's/^listening on //p' "$work/serve.log") && [ -n "$api" ]; do
    kill -0 $pid 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.2
done
s3=$(sed -n 's/^storage listening on //p' "$work/serve.log")
org_token() { "$bin" admin create-org "$1" --plan pro | sed -n 's/^owner token (shown once): //p'; }
alt=$(org_token "Alt"); tenant=$(org_token "Tenant")
key() { # token -> "access secret"
    curl -sf -H "authorization: Bearer $1" -H 'content-type: application/json' \
        -d '{"name":"s3-tests"}' "$api/api/v1/storage/keys" |
        python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["accessKeyId"], k["secretAccessKey"])'
}
org_part() { # token -> the org part of its bucket names (the probe bucket
    # is deleted: the suite expects an account without buckets)
    probe=$(curl -sf -H "authorization: Bearer $1" -H 'content-type: application/json' \
        -d '{"name":"probe"}' "$api/api/v1/storage/buckets")
    curl -sf -X DELETE -H "authorization: Bearer $1" \
        "$api/api/v1/storage/buckets/$(echo "$probe" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" > /dev/null
    echo "$probe" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bucket"].split("-")[1])'
}
set -- "$@"
read -r main_id main_secret <<EOT
$(key "$token")
EOT
read -r alt_id alt_secret <<EOT
$(key "$alt")
EOT
read -r tenant_id tenant_secret <<EOT
$(key "$tenant")
EOT
org=$(org_part "$token")
org_id() { # token -> the organisation's id: its S3 canonical user id (ACL grantee, owner)
    curl -sf -H "authorization: Bearer $1" "$api/api/v1/me" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["organization"]["id"])'
}
main_org=$(org_id "$token"); alt_org=$(org_id "$alt"); tenant_org=$(org_id "$tenant")
host=${s3#http://}
cat > "$work/s3tests.conf" <<EOT
[DEFAULT]
host = ${host%:*}
port = ${host##*:}
is_secure = False
ssl_verify = False

[fixtures]
bucket prefix = plt-$org-s3t{random}-

[s3 main]
display_name = $main_org
user_id = $main_org
email = main@example.com
api_name = default
access_key = $main_id
secret_key = $main_secret
# Keys of the built-in KMS: a name is the organisation's key from its first use.
kms_keyid = s3tests-key-1
kms_keyid2 = s3tests-key-2

[s3 alt]
display_name = $alt_org
user_id = $alt_org
email = alt@example.com
access_key = $alt_id
secret_key = $alt_secret

[s3 tenant]
display_name = $tenant_org
user_id = $tenant_org
email = tenant@example.com
tenant = tenant
access_key = $tenant_id
secret_key = $tenant_secret

[iam]
email = iam@example.com
user_id = iam
access_key = $main_id
secret_key = $main_secret
display_name = iam

[iam root]
access_key = $main_id
secret_key = $main_secret
user_id = $main_org
email = main@example.com

[iam alt root]
access_key = $alt_id
secret_key = $alt_secret
user_id = $alt_org
email = alt@example.com
EOT
cd "$suite"
S3TEST_CONF="$work/s3tests.conf" PLATEAU_API="$api" PLATEAU_TOKENS="$token,$alt,$tenant" \
PYTHONPATH="$here:$suite" "$venv/bin/python" -m pytest -p plateau_s3tests "$@" || true
echo "server log: $work/serve.log"
