"""An S3-compatible server for Rill's backup tests: moto's threaded server, with
authentication on, an IAM user allowed s3:* and the buckets named on the command line.

    server.py PORT BUCKET...

Prints `s3 http://127.0.0.1:PORT ACCESS_KEY SECRET_KEY` once it serves, then serves
until it is killed.
"""

import json
import os
import sys
import time

# moto checks signatures after this many requests: the four that set the server up
# (the user, its policy, its key, the first bucket) and one per further bucket.
port = int(sys.argv[1])
buckets = sys.argv[2:]
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = str(3 + len(buckets))
os.environ.setdefault("AWS_ACCESS_KEY_ID", "setup")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "setup")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402  (after the environment moto reads at import)
from moto.server import ThreadedMotoServer  # noqa: E402

server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
server.start()
endpoint = f"http://127.0.0.1:{port}"
iam = boto3.client("iam", endpoint_url=endpoint)
iam.create_user(UserName="rill-backup")
iam.put_user_policy(
    UserName="rill-backup",
    PolicyName="backups",
    PolicyDocument=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
    ),
)
key = iam.create_access_key(UserName="rill-backup")["AccessKey"]
s3 = boto3.client(
    "s3",
    endpoint_url=endpoint,
    aws_access_key_id=key["AccessKeyId"],
    aws_secret_access_key=key["SecretAccessKey"],
)
for bucket in buckets:
    s3.create_bucket(Bucket=bucket)
print(f"s3 {endpoint} {key['AccessKeyId']} {key['SecretAccessKey']}", flush=True)
while True:
    time.sleep(3600)
