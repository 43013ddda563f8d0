#pragma once
// Zip archives written byte by byte, for tests of hostile input: an entry can
// declare another size than the bytes it holds (in its local header and in
// the central directory alike, so that consistency checks pass), with Zip64
// fields when the lie needs them. Data is stored, or "deflated" as stored
// deflate blocks (a valid deflate stream, no zlib needed).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <zip.h>

namespace hand_zip {

struct Entry {
  std::string name;
  std::string data;
  std::optional<uint64_t> declared;  // the uncompressed size to claim; data.size() when absent
  bool deflate = false;
  bool zip64 = false;  // ZIP64 size fields whatever the size
};

inline uint32_t crc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return ~crc;
}

inline void put16(std::string& out, uint64_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>((v >> 8) & 0xFF));
}
inline void put32(std::string& out, uint64_t v) {
  put16(out, v & 0xFFFF);
  put16(out, (v >> 16) & 0xFFFF);
}
inline void put64(std::string& out, uint64_t v) {
  put32(out, v & 0xFFFFFFFFu);
  put32(out, v >> 32);
}

// A deflate stream of stored blocks holding `data`.
inline std::string stored_deflate(const std::string& data) {
  std::string out;
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(data.size() - pos, 65535);
    bool last = pos + n == data.size();
    out.push_back(last ? 1 : 0);
    put16(out, n);
    put16(out, ~n & 0xFFFF);
    out.append(data, pos, n);
    pos += n;
  } while (pos < data.size());
  return out;
}

// The whole archive's bytes.
inline std::string archive(const std::vector<Entry>& entries) {
  std::string out;
  std::string central;
  for (const auto& e : entries) {
    std::string body = e.deflate ? stored_deflate(e.data) : e.data;
    uint64_t size = e.declared.value_or(e.data.size());
    bool z64 = size >= 0xFFFFFFFFu || e.zip64;
    std::string extra;
    if (z64) {
      put16(extra, 1);
      put16(extra, 16);
      put64(extra, size);
      put64(extra, body.size());
    }
    auto header = [&](std::string& h) {
      put16(h, z64 ? 45 : 20);      // version needed
      put16(h, 0x0800);             // flags: UTF-8 names
      put16(h, e.deflate ? 8 : 0);  // method
      put16(h, 0);                  // time
      put16(h, 0x21);               // date: 1980-01-01
      put32(h, crc32(e.data));
      put32(h, z64 ? 0xFFFFFFFFu : body.size());
      put32(h, z64 ? 0xFFFFFFFFu : size);
      put16(h, e.name.size());
      put16(h, extra.size());
    };
    uint64_t offset = out.size();
    put32(out, 0x04034b50);
    header(out);
    out += e.name + extra + body;
    put32(central, 0x02014b50);
    put16(central, 0x0300 | 45);  // made by: Unix
    header(central);
    put16(central, 0);  // comment length
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, (e.name.back() == '/' ? 0040755u : 0100644u) << 16);
    put32(central, offset);
    central += e.name + extra;
  }
  uint64_t cd_offset = out.size();
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, entries.size());
  put16(out, entries.size());
  put32(out, central.size());
  put32(out, cd_offset);
  put16(out, 0);
  return out;
}

inline void write(const std::filesystem::path& path, const std::vector<Entry>& entries) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << archive(entries);
}

// Every entry of a real archive, in order, with its bytes (read with libzip).
inline std::vector<Entry> entries_of(const std::filesystem::path& path) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) {
    throw std::runtime_error("cannot open " + path.string());
  }
  std::vector<Entry> out;
  for (zip_int64_t i = 0, n = zip_get_num_entries(z, 0); i < n; ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    Entry e{st.name, std::string(st.size, '\0'), std::nullopt, false};
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    zip_int64_t got = f ? zip_fread(f, e.data.data(), e.data.size()) : -1;
    if (f) {
      zip_fclose(f);
    }
    if (got != static_cast<zip_int64_t>(st.size)) {
      zip_discard(z);
      throw std::runtime_error("cannot read entry " + e.name + " of " + path.string());
    }
    out.push_back(std::move(e));
  }
  zip_discard(z);
  return out;
}

}  // namespace hand_zip
