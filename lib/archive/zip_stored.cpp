// A stored zip entry copied out by the kernel (copy_file_range), its CRC-32 read back.
#include "archive/zip_stored.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <zlib.h>

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

struct OwnedFd {
  int fd = -1;
  ~OwnedFd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

bool read_at(int fd, uint64_t offset, size_t n, std::vector<unsigned char>& out) {
  out.resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t k = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (k <= 0) {
      return false;
    }
    got += static_cast<size_t>(k);
  }
  return true;
}

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | p[i];
  }
  return v;
}

// Where the central directory lies and how many records it holds.
struct ZipDirectoryPlace {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

// The central directory's place from the end of central directory record
// (or its ZIP64 form); nullopt when either is missing or the directory does
// not lie within the file.
std::optional<ZipDirectoryPlace> find_zip_directory(int fd, uint64_t file_size) {
  // The end of central directory record: the last one, within the 64 KiB a
  // comment may take.
  const uint64_t tail_size = std::min<uint64_t>(file_size, 22 + 0xFFFF);
  std::vector<unsigned char> tail;
  if (!read_at(fd, file_size - tail_size, tail_size, tail)) {
    return std::nullopt;
  }
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_size) - 22; i >= 0; --i) {
    if (le(&tail[static_cast<size_t>(i)], 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    return std::nullopt;
  }
  const unsigned char* e = &tail[static_cast<size_t>(eocd)];
  uint64_t entries = le(e + 10, 2);
  uint64_t cd_size = le(e + 12, 4);
  uint64_t cd_offset = le(e + 16, 4);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    // ZIP64: its locator stands right before the record.
    const uint64_t at = file_size - tail_size + static_cast<uint64_t>(eocd);
    std::vector<unsigned char> loc, rec;
    if (at < 20 || !read_at(fd, at - 20, 20, loc) || le(loc.data(), 4) != 0x07064b50 ||
        !read_at(fd, le(loc.data() + 8, 8), 56, rec) || le(rec.data(), 4) != 0x06064b50) {
      return std::nullopt;
    }
    entries = le(rec.data() + 32, 8);
    cd_size = le(rec.data() + 40, 8);
    cd_offset = le(rec.data() + 48, 8);
  }
  if (cd_offset + cd_size > file_size || cd_size > (uint64_t{1} << 30)) {
    return std::nullopt;
  }
  return ZipDirectoryPlace{entries, cd_size, cd_offset};
}

// The fields of a central directory record that stored_entry reads.
struct ZipDirectoryRecord {
  uint64_t flags = 0;
  uint64_t method = 0;
  uint32_t crc = 0;
  uint64_t comp = 0;
  uint64_t size = 0;
  size_t name_len = 0;
  size_t extra_len = 0;
  size_t comment_len = 0;
  uint64_t local = 0;
};

// A central directory record's fields, from its fixed 46 bytes at `h`.
ZipDirectoryRecord zip_directory_record(const unsigned char* h) {
  ZipDirectoryRecord r;
  r.flags = le(h + 8, 2);
  r.method = le(h + 10, 2);
  r.crc = static_cast<uint32_t>(le(h + 16, 4));
  r.comp = le(h + 20, 4);
  r.size = le(h + 24, 4);
  r.name_len = le(h + 28, 2);
  r.extra_len = le(h + 30, 2);
  r.comment_len = le(h + 32, 2);
  r.local = le(h + 42, 4);
  return r;
}

// The ZIP64 extra field holds the values the record marks 0xFFFFFFFF, in
// this order; false when the extra fields overrun.
bool read_zip64_extra(const unsigned char* h, ZipDirectoryRecord& r) {
  for (size_t x = 0; x + 4 <= r.extra_len;) {
    const unsigned char* ex = h + 46 + r.name_len + x;
    const size_t id = le(ex, 2);
    const size_t len = le(ex + 2, 2);
    if (x + 4 + len > r.extra_len) {
      return false;
    }
    if (id == 0x0001) {
      size_t q = 4;
      for (uint64_t* v : {&r.size, &r.comp, &r.local}) {
        if (*v == 0xFFFFFFFF) {
          if (q + 8 > len + 4) {
            return false;
          }
          *v = le(ex + q, 8);
          q += 8;
        }
      }
    }
    x += 4 + len;
  }
  return true;
}

// The entry `name`'s record at `h` taken as stored: its local header read
// and checked against it, and its bytes within the file.
std::optional<StoredEntry> stored_entry_of_record(int fd, uint64_t file_size, const unsigned char* h,
                                                  ZipDirectoryRecord r, const std::string& name) {
  if (!read_zip64_extra(h, r)) {
    return std::nullopt;
  }
  if (r.method != 0 || (r.flags & 1) != 0 || r.comp != r.size) {
    return std::nullopt;  // compressed or encrypted: streamed
  }
  std::vector<unsigned char> lh;
  if (!read_at(fd, r.local, 30, lh) || le(lh.data(), 4) != 0x04034b50) {
    return std::nullopt;
  }
  const uint64_t lname = le(lh.data() + 26, 2);
  const uint64_t lextra = le(lh.data() + 28, 2);
  std::vector<unsigned char> ln;
  if (lname != r.name_len || !read_at(fd, r.local + 30, r.name_len, ln) ||
      std::memcmp(ln.data(), name.data(), r.name_len) != 0) {
    return std::nullopt;
  }
  StoredEntry s{r.local + 30 + lname + lextra, r.size, r.crc};
  if (s.data_offset + s.size > file_size) {
    return std::nullopt;
  }
  return s;
}

}  // namespace

std::optional<StoredEntry> stored_entry(const fs::path& archive, const std::string& name) {
  OwnedFd f{::open(archive.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    return std::nullopt;
  }
  const off_t end = ::lseek(f.fd, 0, SEEK_END);
  if (end < 22) {
    return std::nullopt;
  }
  const uint64_t file_size = static_cast<uint64_t>(end);
  const std::optional<ZipDirectoryPlace> dir = find_zip_directory(f.fd, file_size);
  if (!dir) {
    return std::nullopt;
  }
  std::vector<unsigned char> cd;
  if (!read_at(f.fd, dir->offset, static_cast<size_t>(dir->size), cd)) {
    return std::nullopt;
  }
  size_t p = 0;
  for (uint64_t k = 0; k < dir->entries && p + 46 <= cd.size(); ++k) {
    const unsigned char* h = &cd[p];
    if (le(h, 4) != 0x02014b50) {
      return std::nullopt;
    }
    const ZipDirectoryRecord r = zip_directory_record(h);
    if (p + 46 + r.name_len + r.extra_len + r.comment_len > cd.size()) {
      return std::nullopt;
    }
    const std::string entry(reinterpret_cast<const char*>(h + 46), r.name_len);
    if (entry == name) {
      return stored_entry_of_record(f.fd, file_size, h, r, name);
    }
    p += 46 + r.name_len + r.extra_len + r.comment_len;
  }
  return std::nullopt;
}

CopyResult copy_stored(const fs::path& archive, const StoredEntry& entry, const fs::path& dest, bool check) {
  OwnedFd src{::open(archive.c_str(), O_RDONLY | O_CLOEXEC)};
  if (src.fd < 0) {
    return CopyResult::cannot;
  }
  OwnedFd dst{::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)};
  if (dst.fd < 0) {
    return CopyResult::cannot;
  }
  loff_t in = static_cast<loff_t>(entry.data_offset);
  uint64_t left = entry.size;
  while (left > 0) {
    ssize_t n = ::copy_file_range(src.fd, &in, dst.fd, nullptr, left, 0);
    if (n <= 0) {
      return CopyResult::cannot;  // the caller streams it again, from the start
    }
    left -= static_cast<uint64_t>(n);
  }
  return check ? check_copy(dest, entry) : CopyResult::copied;
}

CopyResult check_copy(const fs::path& file, const StoredEntry& entry) {
  // Its checksum, as the streaming reader checks it: read back from the
  // page cache the copy filled.
  OwnedFd back{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
  if (back.fd < 0) {
    return CopyResult::cannot;
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t k_chunk = 8 << 20;
  std::unique_ptr<unsigned char[]> buf(new unsigned char[k_chunk]);  // not zeroed: read fills it
  uint64_t done = 0;
  while (done < entry.size) {
    ssize_t n = ::read(back.fd, buf.get(), k_chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n == 0 ? CopyResult::bad_crc : CopyResult::cannot;  // shorter than recorded: damaged
    }
    crc = crc32(crc, buf.get(), static_cast<uInt>(n));
    done += static_cast<uint64_t>(n);
  }
  return static_cast<uint32_t>(crc) == entry.crc ? CopyResult::copied : CopyResult::bad_crc;
}

}  // namespace aoti_bisect
