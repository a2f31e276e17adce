#!/usr/bin/env python3
"""moto's S3 server for the tests, in its signature-checking mode (docs: ../shared/DESIGN-SYNC.md §1.2).

    python3 moto_s3.py BUCKET [BUCKET...]

Starts `moto_server -H 127.0.0.1 -p PORT` with INITIAL_NO_AUTH_ACTION_COUNT=3: the first three calls (IAM: a
user, its access key, an s3:* policy) go unsigned, every later request must carry a valid SigV4 signature (moto
recomputes it with botocore). Creates the buckets with the new key, then prints

    PORT n
    KEY <access key id>
    SECRET <secret access key>

and serves until its stdin closes; then it stops the server. Exits 3 if moto or boto3 is missing.
"""
import os, signal, socket, subprocess, sys, time

try:
    import boto3
    from botocore.config import Config
except ImportError:
    print("boto3 is not installed: run scripts/install-deps --test", file=sys.stderr)
    sys.exit(3)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    buckets = sys.argv[1:] or ["vault"]
    moto = None
    for candidate in ("moto_server",):
        path = subprocess.run(["sh", "-c", f"command -v {candidate}"], capture_output=True, text=True).stdout.strip()
        if path:
            moto = path
    if not moto:
        print("moto_server is not installed: run scripts/install-deps --test", file=sys.stderr)
        sys.exit(3)
    for _ in range(5):
        port = free_port()
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(name, None)
        server = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 30
        up = False
        while time.time() < deadline and server.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    up = True
                    break
            except OSError:
                time.sleep(0.1)
        if up:
            break
        server.kill()
    else:
        print("moto_server did not start", file=sys.stderr)
        sys.exit(1)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        common = dict(endpoint_url=endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        iam = boto3.client("iam", aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap", **common)
        iam.create_user(UserName="vault-test")
        key = iam.create_access_key(UserName="vault-test")["AccessKey"]
        iam.put_user_policy(UserName="vault-test", PolicyName="s3", PolicyDocument=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}'))
        s3 = boto3.client("s3", aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"], **common)
        for bucket in buckets:
            s3.create_bucket(Bucket=bucket)
        print(f"PORT {port}\nKEY {key['AccessKeyId']}\nSECRET {key['SecretAccessKey']}", flush=True)
        sys.stdin.read()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
