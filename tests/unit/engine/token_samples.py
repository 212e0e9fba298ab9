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

# Other scripts a tokenizer splits into pieces of a character or byte (the estimate counts them
# by script, never under any reference), then emoji, symbols, rare Han and random-looking runs.

GREEK = """\
Μαρία: Πριν βγάλουμε την έκδοση την Παρασκευή, μπορείς να δεις γιατί απέτυχε δύο φορές η νυχτερινή
κατασκευή αυτή την εβδομάδα; Τα αρχεία καταγραφής λένε ότι το βήμα της μετάβασης έληξε μετά από
τριακόσια δευτερόλεπτα, αλλά μόνο στη βάση δεδομένων της δοκιμαστικής εγκατάστασης.

Βοηθός: Διάβασα τα δύο τελευταία αρχεία. Και οι δύο εκτελέσεις σταμάτησαν στη συμπλήρωση των
συγγραφέων, που διατρέχει κάθε μήνυμα σε μία συναλλαγή. Προτείνω να τη χωρίσουμε σε παρτίδες.
"""

RUSSIAN = """\
Мария: Перед пятничным релизом посмотри, пожалуйста, почему ночная сборка дважды упала на этой
неделе? В логах написано, что шаг миграции прервался по тайм-ауту через триста секунд, но только
на базе данных тестового стенда, которая намного больше, чем у нас на ноутбуках.

Ассистент: Я прочитал два последних журнала сборки. Оба запуска остановились на заполнении авторов,
которое обходит все сообщения в одной транзакции. Предлагаю разбить заполнение на пачки по десять
тысяч строк и фиксировать транзакцию после каждой пачки.
"""

ARABIC = """\
مريم: قبل أن نصدر النسخة يوم الجمعة، هل يمكنك أن تتحقق لماذا فشل البناء الليلي مرتين هذا الأسبوع؟
تقول السجلات إن خطوة الترحيل انتهت مهلتها بعد ثلاثمائة ثانية، لكن فقط على قاعدة
بيانات بيئة الاختبار.

المساعد: قرأت آخر سجلين للبناء. توقف التشغيلان عند ملء أسماء المؤلفين، الذي يمر على كل رسالة
في معاملة واحدة. أقترح تقسيم العملية إلى دفعات من عشرة آلاف صف، مع تأكيد المعاملة بعد كل دفعة.
"""

HEBREW = """\
מרים: לפני שנשחרר את הגרסה ביום שישי, תוכל לבדוק למה הבנייה הלילית נכשלה פעמיים השבוע?
ביומנים כתוב ששלב ההגירה הסתיים בפסק זמן אחרי שלוש מאות שניות, אבל רק במסד הנתונים של סביבת הבדיקות.

העוזר: קראתי את שני היומנים האחרונים. שתי הריצות נעצרו במילוי שמות המחברים, שעובר על כל הודעה
בטרנזקציה אחת. אני מציע לחלק את המילוי לקבוצות של עשרת אלפים שורות.
"""

HINDI = """\
मीरा: शुक्रवार को रिलीज़ करने से पहले क्या तुम देख सकते हो कि इस हफ़्ते रात का बिल्ड दो बार क्यों विफल हुआ?
लॉग में लिखा है कि माइग्रेशन का चरण तीन सौ सेकंड के बाद समय सीमा पार कर गया, लेकिन केवल परीक्षण
परिवेश के डेटाबेस पर।

सहायक: मैंने पिछले दो बिल्ड लॉग पढ़े। दोनों बार काम लेखकों के नाम भरने वाले चरण पर रुका, जो हर संदेश को
एक ही लेन-देन में संसाधित करता है। मेरा सुझाव है कि इसे दस हज़ार पंक्तियों के समूहों में बाँट दिया जाए।
"""

INDIC = """\
মীরা: শুক্রবার রিলিজের আগে তুমি কি দেখতে পারবে কেন এই সপ্তাহে রাতের বিল্ড দুবার ব্যর্থ হয়েছে?
மீரா: வெள்ளிக்கிழமை வெளியீட்டுக்கு முன், இந்த வாரம் இரவு கட்டமைப்பு ஏன் இரண்டு முறை தோல்வியடைந்தது?
నమస్కారం, మీరు ఎలా ఉన్నారు? ఈ రోజు వాతావరణం బాగుంది.
ನಮಸ್ಕಾರ, ನೀವು ಹೇಗಿದ್ದೀರಿ? ಇಂದು ಹವಾಮಾನ ಚೆನ್ನಾಗಿದೆ.
നമസ്കാരം, സുഖമാണോ? ഇന്ന് നല്ല കാലാവസ്ഥയാണ്.
નમસ્તે, તમે કેમ છો? આજે હવામાન સારું છે.
ਸਤ ਸ੍ਰੀ ਅਕਾਲ, ਤੁਸੀਂ ਕਿਵੇਂ ਹੋ? ਅੱਜ ਮੌਸਮ ਵਧੀਆ ਹੈ।
ආයුබෝවන්, ඔබට කොහොමද? අද හොඳ කාලගුණයක්.
"""

THAI = """\
มาลี: ก่อนจะออกเวอร์ชันใหม่วันศุกร์ ช่วยดูหน่อยได้ไหมว่าทำไมบิลด์ตอนกลางคืนล้มเหลวสองครั้งในสัปดาห์นี้
บันทึกบอกว่าขั้นตอนการย้ายข้อมูลหมดเวลาหลังจากสามร้อยวินาที แต่เกิดขึ้นเฉพาะกับฐานข้อมูลของระบบทดสอบ
"""

OTHER_SCRIPTS = """\
Բարեւ Ձեզ, ինչպես եք: Այսօր լավ եղանակ է:
გამარჯობა, როგორ ხარ? დღეს კარგი ამინდია.
ສະບາຍດີ, ເຈົ້າສະບາຍດີບໍ? ມື້ນີ້ອາກາດດີ.
မင်္ဂလာပါ ကျေးဇူးတင်ပါတယ် ဒီနေ့ ရာသီဥတု ကောင်းပါတယ်။
សួស្តី អរគុណច្រើន ថ្ងៃនេះ អាកាសធាតុល្អ។
ሰላም ነው? ዛሬ ጥሩ የአየር ሁኔታ ነው።
བཀྲ་ཤིས་བདེ་ལེགས། དེ་རིང་གནམ་གཤིས་ཡག་པོ་འདུག
"""

EUROPEAN = """\
Marie : Avant de publier la version vendredi, peux-tu regarder pourquoi la compilation de nuit
a échoué deux fois cette semaine ? Les journaux disent que l'étape de migration a expiré
après trois cents secondes.
Maria: Bevor wir am Freitag veröffentlichen, kannst du prüfen, warum der nächtliche Build
diese Woche zweimal fehlgeschlagen ist? Laut Protokoll ist der Migrationsschritt nach
dreihundert Sekunden abgebrochen.
Mai: Trước khi phát hành phiên bản vào thứ Sáu, bạn có thể xem tại sao bản dựng ban đêm
bị lỗi hai lần trong tuần này không? Nhật ký nói rằng bước di chuyển dữ liệu đã hết thời gian
sau ba trăm giây.
"""

EMOJI = """\
小王：好的👍 收到🎉 今晚发版没问题✅
老李：太棒了😄🚀🚀🚀 辛苦大家🙏 明天见👋
助手：构建已通过 👍🏽，发布说明在群里 📌；团队合影 👨‍👩‍👧‍👦 和 🇨🇳 旗帜的表情也加上了 ❤️
"""

SYMBOLS = """\
✓ 构建通过 → 部署到预发 ⚠ 迁移耗时 ≥ 300 s，≠ 预期；回滚 ← 手动 ★ 优先
∑ 总耗时 ≈ 12 min ± 2，内存 ≤ 2 GiB × 3 个进程，温度 40 °C
.
├── apps
│   ├── engine
│   │   └── compaction
│   └── rooms
└── tests
"""

RARE_HAN = """\
我家楼下那家𠮷野家的𩸽鱼饭很好吃，老板姓𡈽，他说菜单上的“𠀋”“𤭢”“𥒎”“𦰩”“𧺯”“𨳒”“𪚲”
这几个字在很多电脑上都显示不出来，只好手写贴在墙上。
"""

HASHES = """\
请看任务 550e8400-e29b-41d4-a716-446655440000 和 6ba7b810-9dad-11d1-80b4-00c04fd430c8 的日志，
提交 3f786850e387550fdab836ed7e6dc881de23001b 修好了；镜像摘要是
sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855，
令牌 eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.
SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c 已经作废。
"""

NUMBERS = """\
2026-05-14T09:12:03.118Z worker-3 run=48213 step=17 input_tokens=182734 output_tokens=2048 ms=8312
2026-05-14T09:12:11.430Z worker-3 run=48213 step=18 input_tokens=184790 output_tokens=512 ms=2975
2026-05-14T09:12:14.406Z worker-1 run=48214 step=1 input_tokens=10344 output_tokens=1024 ms=4410
total 3 steps, 377868 input tokens, 3584 output tokens, p50 4410 ms, p95 8312 ms, cost $1.1392
"""
