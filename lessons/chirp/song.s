; song.s: the note table and the two streams, all in PRG bank 0, which the
; driver in main.s pages in at $8000 before it reads them.

.export periods, stream_starts

REST = 0                    ; note numbers: indexes into `periods`
C4 = 1
D4 = 2
E4 = 3
F4 = 4
G4 = 5
A4 = 6
B4 = 7
C5 = 8
G5 = 9
LOOP = $FF                  ; back to the stream's start

.segment "BANK0"
periods:                    ; NTSC timer values: 1789773 / (16 * Hz) - 1
    .word 0                 ; REST: never read
    .word $1AB, $17C, $152, $13F, $11C, $0FD, $0E1  ; C4 D4 E4 F4 G4 A4 B4
    .word $0D5, $08E                                ; C5 G5

stream_starts:              ; pulse 1, pulse 2
    .word melody, chirps

melody:                     ; (note, frames): four bars of 48 frames
    .byte C4, 12, E4, 12, G4, 12, C5, 12
    .byte B4, 12, G4, 12, E4, 12, G4, 12
    .byte A4, 12, F4, 12, D4, 12, F4, 12
    .byte G4, 24, REST, 24
    .byte LOOP

chirps:                     ; a short rising chirp once a bar
    .byte REST, 42, G5, 6
    .byte LOOP
