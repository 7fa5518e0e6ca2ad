// The reference for tests/core/png_test.cpp and plot_test.cpp: node's own zlib reads what gossamer wrote.
//
//   node png_reference.mjs decode FILE.png OUT.rgb   checks the PNG, writes its unfiltered RGB pixels to OUT.rgb
//   node png_reference.mjs checksums FILE            CRC-32 and Adler-32 of FILE's bytes, as zlib computes them
//
// Prints one JSON line. CRC-32 comes from zlib.crc32 (node ≥ 20.15 / 22.2) or, on older nodes, from the CRC-32
// that zlib's gzip writes into its trailer; Adler-32 from zlib's deflate trailer, and inflateSync checks the
// stream's own Adler-32 as it decompresses. Nothing here recomputes a checksum by hand.
import fs from 'node:fs';
import zlib from 'node:zlib';

const crcSource = typeof zlib.crc32 === 'function' ? 'zlib.crc32' : 'gzip trailer';
function crc32(bytes) {
  if (typeof zlib.crc32 === 'function') return zlib.crc32(bytes) >>> 0;
  const gzip = zlib.gzipSync(bytes);
  return gzip.readUInt32LE(gzip.length - 8);
}
function adler32(bytes) {
  const deflated = zlib.deflateSync(bytes);
  return deflated.readUInt32BE(deflated.length - 4);
}

function checksums(file) {
  const bytes = fs.readFileSync(file);
  return { crc32: crc32(bytes), adler32: adler32(bytes), crc_source: crcSource, node: process.version };
}

function decode(file, out) {
  const png = fs.readFileSync(file);
  const problems = [];
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (png.length < 8 || !png.subarray(0, 8).equals(signature)) problems.push('bad signature');

  const chunks = [];
  const idat = [];
  let header = null;
  let offset = 8;
  while (offset + 12 <= png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    if (offset + 12 + length > png.length) {
      problems.push(`chunk ${type} runs past the end of the file`);
      break;
    }
    const data = png.subarray(offset + 8, offset + 8 + length);
    const stored = png.readUInt32BE(offset + 8 + length);
    const expected = crc32(png.subarray(offset + 4, offset + 8 + length));
    if (stored !== expected) problems.push(`chunk ${chunks.length} (${type}): CRC ${stored} but zlib says ${expected}`);
    chunks.push(type);
    if (type === 'IHDR') {
      header = {
        width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], color: data[9],
        compression: data[10], filter: data[11], interlace: data[12], length,
      };
    }
    if (type === 'IDAT') idat.push(data);
    offset += 12 + length;
  }
  if (offset !== png.length) problems.push(`${png.length - offset} bytes after the last chunk`);
  if (chunks[0] !== 'IHDR' || chunks[chunks.length - 1] !== 'IEND') problems.push(`chunk order ${chunks.join(',')}`);
  if (header === null) return { ok: false, problems, chunks };
  if (header.length !== 13 || header.depth !== 8 || header.color !== 2 || header.compression !== 0 ||
      header.filter !== 0 || header.interlace !== 0) {
    problems.push(`IHDR ${JSON.stringify(header)} is not 8-bit RGB, non-interlaced`);
  }

  // The zlib stream: header, then only stored deflate blocks, then the Adler-32 trailer.
  const stream = Buffer.concat(idat);
  if (stream.length < 2 || (stream[0] & 0x0f) !== 8 || ((stream[0] << 8) | stream[1]) % 31 !== 0) {
    problems.push('bad zlib header');
  }
  let position = 2;
  let blocks = 0;
  let largest = 0;
  let sawFinal = false;
  while (!sawFinal && position + 5 <= stream.length) {
    const bits = stream[position];
    sawFinal = (bits & 1) === 1;
    if (((bits >> 1) & 3) !== 0) problems.push(`block ${blocks} is not stored (BTYPE ${(bits >> 1) & 3})`);
    const size = stream.readUInt16LE(position + 1);
    if ((size ^ stream.readUInt16LE(position + 3)) !== 0xffff) problems.push(`block ${blocks}: NLEN is not ~LEN`);
    largest = Math.max(largest, size);
    position += 5 + size;
    blocks += 1;
  }
  if (!sawFinal) problems.push('no final block');
  if (position + 4 !== stream.length) problems.push(`${stream.length - position} bytes after the last block (want 4)`);

  let raw = Buffer.alloc(0);
  try {
    raw = zlib.inflateSync(stream);
  } catch (error) {
    problems.push(`zlib.inflateSync: ${error.message}`);
  }
  if (raw.length > 0 && stream.readUInt32BE(stream.length - 4) !== adler32(raw)) problems.push('Adler-32 differs from zlib');

  const rowBytes = 3 * header.width;
  if (raw.length !== (rowBytes + 1) * header.height) {
    problems.push(`inflated ${raw.length} bytes, want ${(rowBytes + 1) * header.height}`);
  } else {
    const pixels = Buffer.alloc(rowBytes * header.height);
    for (let y = 0; y < header.height; y += 1) {
      const row = raw.subarray(y * (rowBytes + 1), (y + 1) * (rowBytes + 1));
      if (row[0] !== 0) problems.push(`row ${y} uses filter ${row[0]}`);
      row.copy(pixels, y * rowBytes, 1);
    }
    fs.writeFileSync(out, pixels);
  }
  return {
    ok: problems.length === 0, problems: problems.slice(0, 20), chunks, width: header.width, height: header.height,
    blocks, largest_block: largest, crc_source: crcSource, node: process.version,
  };
}

const [mode, file, out] = process.argv.slice(2);
const result = mode === 'decode' ? decode(file, out) : mode === 'checksums' ? checksums(file) : { error: `mode ${mode}?` };
process.stdout.write(JSON.stringify(result) + '\n');
