"""Texts the token estimate is calibrated on: English, Chinese, and code with Chinese around it.

Written for confab's tests (a team talking to its agent), so they read like what a room sends.
"""

ENGLISH = """\
Alice: Before we ship the release on Friday, can you check why the nightly build failed twice
this week? The logs say the migration step timed out after 300 seconds, but only on the staging
database, which is a lot bigger than the one on our laptops.

Agent: I read the last two build logs. Both runs stopped in `0042_backfill_authors`, which walks
every message in one transaction. On staging that table has 4.8 million rows, so the transaction
holds its locks for minutes and the health check gives up first. I suggest splitting the backfill
into batches of 10,000 rows, committing after each batch, and moving it out of the migration into
a management command that the deploy runs afterwards.

Bob: That sounds right. Please also add a test that runs the command twice, so we know it is safe
to restart halfway through, and write down in the README how long it took on staging.
"""

CHINESE = """\
小王：周五发版之前，你能帮忙看一下这周夜间构建为什么失败了两次吗？日志里说迁移那一步跑了三百秒就超时了，
可是只在预发环境的数据库上出问题，那边的数据比我们本地的多得多。

助手：我看了最近两次构建的日志。两次都停在“回填作者”这个迁移上，它在一个事务里逐条处理所有消息。
预发环境的这张表有四百八十万行，事务一直占着锁，健康检查先放弃了。建议把回填拆成每批一万行，
每批提交一次，并且把它从迁移里挪出来，改成部署之后再执行的管理命令。

老李：思路没问题。顺便加一个测试，把这个命令连续跑两遍，确认中途重启也是安全的；
另外请在说明文档里记一下它在预发环境上跑了多久。我们下午三点在三号会议室对一下上线清单，
谁有空的话把回滚步骤也整理出来，尤其是数据库那部分，别到时候手忙脚乱。
"""

MIXED = """\
这个函数负责把消息分批回填作者字段，每批提交一次，这样中途失败也不会丢掉已经处理好的数据：

```python
def backfill_authors(batch_size: int = 10_000) -> int:
    \"\"\"回填作者；返回处理的行数。\"\"\"
    done = 0
    while True:
        with transaction.atomic():
            ids = list(Message.objects.filter(author_name="")
                       .values_list("id", flat=True)[:batch_size])
            if not ids:
                return done
            # 只更新这一批，锁很快就会释放
            Message.objects.filter(id__in=ids).update(author_name=F("author__name"))
        done += len(ids)
```

运行方式：`python manage.py backfill_authors --batch-size 5000`。如果预发环境上还是太慢，
可以先把批量调小一点，再看看 `EXPLAIN ANALYZE` 的输出，确认用上了 `author_name` 上的索引。
"""

JAPANESE = """\
明日の午前十時に会議室でデータベース移行の計画を話し合います。事前に資料を読んでおいてください。
質問があればチャンネルでどうぞ。移行は三段階に分けて、各段階のあとで動作確認をします。
"""

KOREAN = """\
내일 오전 열 시에 회의실에서 데이터베이스 이전 계획을 논의합니다. 미리 문서를 읽어 주시고,
질문이 있으면 채널에 남겨 주세요. 이전은 세 단계로 나누어 단계마다 동작을 확인합니다.
"""
