// The vertex side of hot reload (filled by the hot-reload issue).
export {};
