// An app's own function beside shardcount: a notification when a counter
// reaches 100 (a post's likes:POST, its plays:POST). It is triggered by the
// counter's document, which shardcount's roll-up writes about once a
// second with the count:
// counts jump (0 → 36 → 105) and events may come out of order, so it acts
// on the crossing of 100, and the notification's id makes it once.
const { onDocumentWritten } = require("firebase-functions/v2/firestore");
const { initializeApp } = require("firebase-admin/app");
const { getFirestore } = require("firebase-admin/firestore");

initializeApp();

exports.notifyAt100 = onDocumentWritten("counters/{counterId}", async (event) => {
  const before = event.data.before.data()?.count ?? 0;
  const after = event.data.after.data()?.count ?? 0;
  if (before >= 100 || after < 100) return;
  const id = event.params.counterId;
  try {
    await getFirestore().collection("notifications").doc(`${id}-100`).create({ counter_id: id, count: after, at: new Date() });
    console.log(`${id} reached 100 (${before} -> ${after}): notified`);
  } catch (err) {
    if (err.code !== 6) throw err; // 6: ALREADY_EXISTS, a redelivered event
  }
});
