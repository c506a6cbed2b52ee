// A small command-line AMQP 1.0 client on rhea (npm), for tests/amqp/test_rhea.py.
//   node client.js PORT send ADDRESS MESSAGES_JSON        -> prints {"accepted": n}
//   node client.js PORT receive ADDRESS COUNT [OPTIONS_JSON] -> prints one JSON line per message
// OPTIONS_JSON: {"selector": "...", "durable": "sub-name", "container": "id", "detach": true,
//                "user": "u", "password": "p", "timeout_ms": 15000, "ready": true}
// With "ready" the receiver prints {"ready": true} once its link is attached.
'use strict';
const rhea = require('rhea');

const [port, mode, address, arg, optionsText] = process.argv.slice(2);
const options = optionsText ? JSON.parse(optionsText) : {};
const container = rhea.create_container({ id: options.container || undefined });
const connectOptions = { host: '127.0.0.1', port: Number(port), reconnect: false };
if (options.user) { connectOptions.username = options.user; connectOptions.password = options.password; }
const timer = setTimeout(() => { console.error('timed out'); process.exit(2); }, options.timeout_ms || 15000);
const finish = (connection) => { clearTimeout(timer); connection.close(); };

container.on('connection_error', (context) => { console.error('connection error', context.connection.error); process.exit(3); });
container.on('disconnected', (context) => { if (context.error) { console.error('disconnected', String(context.error)); process.exit(3); } });

const connection = container.connect(connectOptions);
if (mode === 'send') {
  const messages = JSON.parse(arg);
  let accepted = 0;
  const sender = connection.open_sender(address);
  let next = 0;
  container.on('sendable', (context) => {
    while (context.sender.sendable() && next < messages.length) {
      const m = messages[next++];
      if (m.body_type === 'map') { m.message_annotations = { 'x-opt-jms-msg-type': 2 }; }
      if (m.body_type === 'bytes') { m.body = rhea.message.data_section(Buffer.from(m.body, 'utf8')); }
      delete m.body_type;
      context.sender.send(m);
    }
  });
  container.on('accepted', () => {
    accepted += 1;
    if (accepted === messages.length) { console.log(JSON.stringify({ accepted })); finish(connection); }
  });
  container.on('rejected', (context) => { console.log(JSON.stringify({ rejected: String(context.delivery.remote_state && context.delivery.remote_state.error && context.delivery.remote_state.error.condition) })); finish(connection); });
  void sender;
} else if (mode === 'receive') {
  const count = Number(arg);
  const source = { address };
  if (options.selector) { source.filter = rhea.filter.selector(options.selector); }
  if (options.durable) { source.durable = 2; source.expiry_policy = 'never'; }
  const receiver = connection.open_receiver({ name: options.durable || undefined, source, autoaccept: true });
  let got = 0;
  if (count === 0) {
    receiver.on('receiver_open', () => { console.log(JSON.stringify({ ready: true })); finish(connection); });
  } else if (options.ready) {
    receiver.on('receiver_open', () => console.log(JSON.stringify({ ready: true })));
  }
  container.on('receiver_error', (context) => { console.log(JSON.stringify({ refused: context.receiver.error && context.receiver.error.condition })); finish(connection); });
  container.on('message', (context) => {
    const m = context.message;
    const body = Buffer.isBuffer(m.body) ? m.body.toString('utf8') : (m.body && m.body.typecode ? String(m.body.content) : m.body);
    console.log(JSON.stringify({ body, subject: m.subject, correlation_id: m.correlation_id, to: m.to,
      application_properties: m.application_properties, message_annotations: m.message_annotations }));
    got += 1;
    if (got === count) {
      if (options.detach) { receiver.detach(); connection.close(); clearTimeout(timer); } else { finish(connection); }
    }
  });
}
