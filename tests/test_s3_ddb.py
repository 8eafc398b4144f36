"""`s3+ddb://` against a non-AWS DynamoDB endpoint (issue 17, item 7): moto's server plays both S3 and
DynamoDB; with the bucket and the commit table created first (as the README shows) and `DYNAMODB_ENDPOINT`
pointing Lance's DynamoDB client at it, a real `memcli serve` stores and recalls, and every table's commits
are recorded in DynamoDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _memcli_server import MEMCLI, hash_env, start_server
from _moto import KEY_ID, REGION, SECRET, MotoServer, moto_missing, s3_env

pytestmark = pytest.mark.slow


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    why = moto_missing()
    if why:
        pytest.skip(why)
    server = MotoServer(tmp_path / "moto.log")
    yield server
    server.stop()


def test_serve_on_s3_ddb_with_a_local_dynamodb_endpoint(moto: MotoServer, tmp_path: Path) -> None:
    import boto3

    moto.create_bucket("team-memory")
    ddb = boto3.client("dynamodb", endpoint_url=moto.endpoint, aws_access_key_id=KEY_ID,
                       aws_secret_access_key=SECRET, region_name=REGION)
    ddb.create_table(TableName="memcli-commits", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                                {"AttributeName": "version", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                                           {"AttributeName": "version", "AttributeType": "N"}])
    env = {**hash_env(tmp_path), **s3_env(moto.endpoint, "s3+ddb://team-memory/memcli?ddbTableName=memcli-commits"),
           "DYNAMODB_ENDPOINT": moto.endpoint}
    srv = start_server(MEMCLI, env, tmp_path / "home")
    try:
        with srv.client(timeout=60) as api:
            for fact in ("the release train leaves on thursdays", "hotfixes skip the train with two approvals"):
                assert api.post("/api/memories", json={"content": fact}).status_code == 201
            hits = api.get("/api/search", params={"q": "when does the release train leave", "limit": 2}).json()
            assert "thursdays" in hits[0]["content"]
    finally:
        srv.stop()
    items = ddb.scan(TableName="memcli-commits")["Items"]
    tables = {i["base_uri"]["S"].rsplit("/", 1)[-1] for i in items}
    assert "memories.lance" in tables  # the commits went through DynamoDB
    versions = sorted(int(i["version"]["N"]) for i in items if i["base_uri"]["S"].endswith("memories.lance"))
    assert len(versions) >= 3  # created, then one commit per remember at least
