"""A pytest plugin that runs ceph/s3-tests against Plateau (see
../CONFORMANCE.md). Buckets are made through Plateau's API, as its users
make them: the suite's bucket helpers are replaced, nothing else is.

- get_new_bucket_name() creates a bucket over the API
  (POST /api/v1/storage/buckets, name `s3t<random>-<n>`) and returns the
  S3 name Plateau gave it (`plt-<org>-s3t<random>-<n>-<suffix>`), which
  starts with the configured bucket prefix.
- A CreateBucket the suite then sends for a name the helper made reaches
  the server, whose BucketAlreadyOwnedByYou is taken as the success; its
  canned ACL, if any, is then set with PutBucketAcl, its ObjectOwnership
  with PutBucketOwnershipControls. Any other CreateBucket reaches the
  server as it is.
- Teardown deletes the versions (objects and delete markers), uploads and
  buckets under the prefix.

Environment: PLATEAU_API (http://127.0.0.1:<port>), PLATEAU_TOKENS
(`main,alt,tenant` owner tokens, comma-separated).
"""

import itertools
import json
import os
import urllib.request

import botocore.client
import botocore.exceptions

_made = set()
_counter = itertools.count(1)


def _api_bucket(token, name):
    req = urllib.request.Request(
        os.environ["PLATEAU_API"] + "/api/v1/storage/buckets",
        data=json.dumps({"name": name}).encode(),
        method="POST",
        headers={"authorization": "Bearer " + token, "content-type": "application/json"},
    )
    with urllib.request.urlopen(req) as r:
        return json.load(r)["bucket"]


def _new_bucket_name():
    from s3tests import functional as f

    org_prefix = f.prefix.split("s3t", 1)[0]
    name = f.prefix[len(org_prefix):] + str(next(_counter))
    bucket = _api_bucket(os.environ["PLATEAU_TOKENS"].split(",")[0], name)
    _made.add(bucket)
    return bucket


_call = botocore.client.BaseClient._make_api_call


def _make_api_call(self, operation, params):
    if operation == "CreateBucket" and params.get("Bucket") in _made:
        _made.discard(params["Bucket"])
        # The request reaches the server (a test's broken headers are
        # refused there); its BucketAlreadyOwnedByYou is the success.
        try:
            answer = _call(self, operation, params)
        except botocore.exceptions.ClientError as e:
            if e.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise
            answer = {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}},
                      "Location": "/" + params["Bucket"]}
        # The canned ACL a create asks for is set as PutBucketAcl sets it.
        if params.get("ACL"):
            _call(self, "PutBucketAcl", {"Bucket": params["Bucket"], "ACL": params["ACL"]})
        # So is the ownership rule a create asks for.
        if params.get("ObjectOwnership"):
            _call(self, "PutBucketOwnershipControls", {"Bucket": params["Bucket"],
                  "OwnershipControls": {"Rules": [{"ObjectOwnership": params["ObjectOwnership"]}]}})
        # Object lock at creation (which the API's `objectLock` gives a
        # new bucket) is enabled as on an existing bucket: versioning,
        # then PutObjectLockConfiguration.
        if params.get("ObjectLockEnabledForBucket"):
            _call(self, "PutBucketVersioning", {"Bucket": params["Bucket"],
                  "VersioningConfiguration": {"Status": "Enabled"}})
            _call(self, "PutObjectLockConfiguration", {"Bucket": params["Bucket"],
                  "ObjectLockConfiguration": {"ObjectLockEnabled": "Enabled"}})
        return answer
    return _call(self, operation, params)


def _nuke_prefixed_buckets(prefix, client=None):
    from s3tests import functional as f

    client = client or f.get_client()
    for b in client.list_buckets().get("Buckets", []):
        name = b["Name"]
        if not name.startswith(prefix):
            continue
        try:
            # Every version (current objects are versions too), first page
            # again until none is left: a page marker may name a version
            # deleted meanwhile.
            rounds = 0
            while True:
                page = client.list_object_versions(Bucket=name)
                found = page.get("Versions", []) + page.get("DeleteMarkers", [])
                keys = [{"Key": o["Key"], "VersionId": o["VersionId"]} for o in found]
                if not keys:
                    break
                r = client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True},
                                          BypassGovernanceRetention=True)
                if r.get("Errors"):
                    # Versions under object lock: wait out short
                    # retentions (at most 60 s, as the suite's own
                    # nuke_bucket does), release legal holds.
                    rounds += 1
                    if rounds > 3:
                        raise RuntimeError("versions of %s could not be deleted" % name)
                    _unlock(client, name, r["Errors"])
            for u in client.list_multipart_uploads(Bucket=name).get("Uploads", []):
                client.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
            client.delete_bucket(Bucket=name)
        except Exception as e:  # cleanup goes on with the next bucket
            print("cleanup of", name, "failed:", e)


def _unlock(client, bucket, errors):
    import datetime
    import time

    wait = 0
    for e in errors:
        key, version = e["Key"], e.get("VersionId")
        try:
            client.put_object_legal_hold(Bucket=bucket, Key=key, VersionId=version,
                                         LegalHold={"Status": "OFF"})
            until = client.get_object_retention(Bucket=bucket, Key=key, VersionId=version)
            left = (until["Retention"]["RetainUntilDate"]
                    - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            wait = max(wait, left)
        except Exception:
            pass
    if wait > 60:
        raise RuntimeError("bucket %s has versions locked for %d more seconds" % (bucket, wait))
    time.sleep(max(wait, 0) + 1)


def pytest_configure(config):
    botocore.client.BaseClient._make_api_call = _make_api_call
    from s3tests import functional as f
    from s3tests.functional import test_headers, test_s3

    for module in (f, test_s3, test_headers):
        if hasattr(module, "get_new_bucket_name"):
            module.get_new_bucket_name = _new_bucket_name
        if hasattr(module, "nuke_prefixed_buckets"):
            module.nuke_prefixed_buckets = _nuke_prefixed_buckets
