#!/usr/bin/env node
// Node client for formulary-rag (rag.v1). Loads ../../protos with @grpc/proto-loader at run time.
//
//   node clients/node/client.js [target]                       # ListDrugs, then Retrieve on the first drug
//   node clients/node/client.js [target] retrieve <query>      # Retrieve by free text
//   node clients/node/client.js [target] retrieve <drug_id> <section_key>
//   node clients/node/client.js [target] list-drugs | corpus | indication <condition>
//   node clients/node/client.js [target] ask <question> [conversation_id]   # one JSON line per streamed event
//
// target: argv[2] when it looks like host:port, else $RAG_TARGET, else 127.0.0.1:50051.
// $RAG_API_KEY, when set, is sent on every call as `authorization: Bearer <key>`.
// Prints one JSON document per call on stdout; on a gRPC error prints {"error": {...}} and exits 1.
// Dependencies resolve from clients/node/node_modules (npm install here) or tools/node/node_modules.
'use strict';

const path = require('path');
const crypto = require('crypto');

function load(name) {
  try {
    return require(name);
  } catch (err) {
    return require(path.join(__dirname, '..', '..', 'tools', 'node', 'node_modules', name));
  }
}

const grpc = load('@grpc/grpc-js');
const protoLoader = load('@grpc/proto-loader');
const protobuf = load('protobufjs');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'protos');
const CORRELATION_HEADER = 'x-correlation-id';

function loadPackage() {
  const files = ['rag/v1/retrieval.proto', 'rag/v1/ingestion.proto', 'rag/v1/understanding.proto',
    'rag/v1/answer.proto'];
  const definition = protoLoader.loadSync(files, {
    includeDirs: [PROTO_ROOT],
    keepCase: true, // JSON keys match the proto field names (drug_id, section_key, ...)
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).rag.v1;
}

class FormularyClient {
  constructor(target, { timeoutMs = 30000, apiKey = '' } = {}) {
    const rag = loadPackage();
    const creds = grpc.credentials.createInsecure();
    this.timeoutMs = timeoutMs;
    this.apiKey = apiKey;
    this.retrieval = new rag.RetrievalService(target, creds);
    this.understanding = new rag.UnderstandingService(target, creds);
    this.ingestion = new rag.IngestionService(target, creds);
    this.answer = new rag.AnswerService(target, creds);
    this.lastCorrelationId = '';
  }

  _metadata(correlationId) {
    const metadata = new grpc.Metadata();
    const sent = correlationId || crypto.randomUUID().replace(/-/g, '');
    metadata.set(CORRELATION_HEADER, sent);
    if (this.apiKey) metadata.set('authorization', `Bearer ${this.apiKey}`);
    return { metadata, sent };
  }

  // Ask streams progress events, the verified answer blocks, then one final message: an async iterator of
  // {progress} | {block} | {final} objects. The correlation id comes in the stream's headers.
  async *ask(query, { conversationId = '', correlationId } = {}) {
    const { metadata, sent } = this._metadata(correlationId);
    this.lastCorrelationId = sent;
    const deadline = new Date(Date.now() + this.timeoutMs);
    const call = this.answer.Ask({ query, conversation_id: conversationId }, metadata, { deadline });
    call.on('metadata', (md) => {
      const echoed = md.get(CORRELATION_HEADER);
      if (echoed.length) this.lastCorrelationId = String(echoed[0]);
    });
    try {
      for await (const event of call) {
        yield { [event.event]: event[event.event] };
      }
    } catch (err) {
      throw Object.assign(err, { correlationId: this.lastCorrelationId });
    }
  }

  _unary(stub, method, request, correlationId) {
    const { metadata, sent } = this._metadata(correlationId);
    this.lastCorrelationId = '';
    const deadline = new Date(Date.now() + this.timeoutMs);
    // The server echoes the id in the trailers (they arrive with the status): settle once both the reply
    // (or error) and the status are in, whichever comes first.
    return new Promise((resolve, reject) => {
      let outcome = null;
      let trailers = null;
      const settle = () => {
        if (!outcome || !trailers) return;
        const echoed = trailers.get(CORRELATION_HEADER);
        this.lastCorrelationId = echoed.length ? String(echoed[0]) : sent;
        if (outcome.err) {
          reject(Object.assign(outcome.err, { correlationId: this.lastCorrelationId }));
        } else {
          resolve(outcome.response);
        }
      };
      const call = stub[method](request, metadata, { deadline }, (err, response) => {
        outcome = { err, response };
        settle();
      });
      call.on('status', (status) => {
        trailers = status.metadata || new grpc.Metadata();
        settle();
      });
    });
  }

  listDrugs(correlationId) {
    return this._unary(this.retrieval, 'ListDrugs', {}, correlationId).then((r) => r.drugs);
  }

  retrieve({ query = '', drug_id = '', section_key = '' } = {}, correlationId) {
    return this._unary(this.retrieval, 'Retrieve', { query, drug_id, section_key }, correlationId);
  }

  lookupIndication(indication, correlationId) {
    return this._unary(this.retrieval, 'LookupIndication', { indication }, correlationId);
  }

  understand(query, correlationId) {
    return this._unary(this.understanding, 'Understand', { query }, correlationId);
  }

  getCorpus(correlationId) {
    return this._unary(this.ingestion, 'GetCorpus', {}, correlationId);
  }

  close() {
    for (const stub of [this.retrieval, this.understanding, this.ingestion, this.answer]) stub.close();
  }
}

// google.rpc.Status / BadRequest, declared here (field numbers from google/rpc/*.proto) to read the
// grpc-status-details-bin trailer: INVALID_ARGUMENT names each offending field.
const RPC_TYPES = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: { nested: { Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } } } },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            BadRequest: {
              fields: { field_violations: { rule: 'repeated', type: 'FieldViolation', id: 1 } },
              nested: {
                FieldViolation: {
                  fields: { field: { type: 'string', id: 1 }, description: { type: 'string', id: 2 } },
                },
              },
            },
          },
        },
      },
    },
  },
});

function fieldViolations(err) {
  const raw = err.metadata ? err.metadata.get('grpc-status-details-bin') : [];
  if (!raw.length) return [];
  const status = RPC_TYPES.lookupType('google.rpc.Status').decode(raw[0]);
  const badRequest = RPC_TYPES.lookupType('google.rpc.BadRequest');
  return status.details
    .filter((any) => any.type_url === 'type.googleapis.com/google.rpc.BadRequest')
    .flatMap((any) => badRequest.decode(any.value).field_violations)
    .map((v) => ({ field: v.field, description: v.description }));
}

function errorJson(err) {
  return {
    error: {
      code: err.code,
      status: grpc.status[err.code] || 'UNKNOWN',
      details: err.details || String(err.message || err),
      correlation_id: err.correlationId || '',
      field_violations: fieldViolations(err),
    },
  };
}

async function main(argv) {
  let args = argv.slice(2);
  let target = process.env.RAG_TARGET || '127.0.0.1:50051';
  if (args.length && /^[^\s]+:\d+$/.test(args[0])) {
    target = args[0];
    args = args.slice(1);
  }
  const command = args[0] || 'example';
  const client = new FormularyClient(target, { apiKey: process.env.RAG_API_KEY || '' });
  const print = (label, value) =>
    process.stdout.write(JSON.stringify({ call: label, correlation_id: client.lastCorrelationId, result: value })
      + '\n');
  try {
    if (command === 'example') {
      const drugs = await client.listDrugs();
      print('ListDrugs', drugs);
      if (!drugs.length) throw Object.assign(new Error('ListDrugs returned no drugs'), { code: grpc.status.NOT_FOUND });
      const drug = drugs[0];
      const section = drug.section_keys.includes('chi_dinh') ? 'chi_dinh' : drug.section_keys[0];
      print('Retrieve', await client.retrieve({ drug_id: drug.drug_id, section_key: section }));
    } else if (command === 'list-drugs') {
      print('ListDrugs', await client.listDrugs());
    } else if (command === 'retrieve') {
      const request = args.length >= 3 ? { drug_id: args[1], section_key: args[2] } : { query: args[1] || '' };
      print('Retrieve', await client.retrieve(request));
    } else if (command === 'corpus') {
      print('GetCorpus', await client.getCorpus());
    } else if (command === 'indication') {
      print('LookupIndication', await client.lookupIndication(args[1] || ''));
    } else if (command === 'ask') {
      for await (const event of client.ask(args[1] || '', { conversationId: args[2] || '' })) {
        print('Ask', event);
      }
    } else {
      throw Object.assign(new Error(`unknown command ${command}`), { code: grpc.status.INVALID_ARGUMENT });
    }
    return 0;
  } catch (err) {
    process.stdout.write(JSON.stringify(errorJson(err)) + '\n');
    return 1;
  } finally {
    client.close();
  }
}

module.exports = { FormularyClient, loadPackage, fieldViolations };

if (require.main === module) {
  main(process.argv).then((code) => {
    process.exitCode = code;
  });
}
