; chirp: a sound driver you can read, its song paged in from a PRG bank.
;
; Once a frame the NMI handler runs the driver (sound-driver): it pages in
; the bank that holds the song (bank-switch), then walks one stream per
; pulse channel. A stream is pairs of (note, frames); note 0 rests and
; $FF loops back to the stream's start. A new note writes its channel's
; four registers: $4000-$4003 for pulse 1, $4004-$4007 for pulse 2.
; NROM has no bank register, so this board is UNROM (mapper 2).

PPUCTRL    = $2000
PPUMASK    = $2001
PPUSTATUS  = $2002
PULSE1     = $4000          ; duty/volume, sweep, period low, period high
APU_STATUS = $4015
SONG_BANK  = 0              ; song.s is assembled into bank 0
LOOP       = $FF

.import periods, stream_starts

.segment "HEADER"
    .byte "NES", $1A, 2, 0  ; two 16K PRG banks, CHR RAM
    .byte $20, $00          ; mapper 2 (UNROM)
    .res 8, 0

.zeropage
bank:    .res 1             ; the bank now at $8000
stream:  .res 4             ; read pointer per channel: pulse 1, pulse 2
wait:    .res 4             ; frames left of its note (bytes 0 and 2)
note:    .res 1
channel: .res 1

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx
    stx PPUCTRL
    stx PPUMASK             ; the screen stays blank
    stx $4010
    bit PPUSTATUS
@vblank1:
    bit PPUSTATUS
    bpl @vblank1
    txa
@clear:
    sta $00,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    lda #SONG_BANK          ; the bank at $8000 is unknown at power-on
    jsr set_bank
    ldx #2
@start:
    lda stream_starts,x     ; each stream from its start,
    sta stream,x
    lda stream_starts+1,x
    sta stream+1,x
    lda #1                  ; its first note on the first update
    sta wait,x
    dex
    dex
    bpl @start
    lda #%00000011          ; pulse 1 and pulse 2 on
    sta APU_STATUS
    lda #%10000000          ; NMI at every vblank
    sta PPUCTRL
idle:
    jmp idle

nmi:
    pha
    txa
    pha
    tya
    pha
    jsr sound_update
    pla
    tay
    pla
    tax
    pla
irq:
    rti

; set_bank: A = the bank to page in at $8000. The register answers writes
; anywhere in $8000-$FFFF, but the ROM drives the bus during the write as
; well, so the write goes to a ROM byte that already holds the value.
set_bank:
    sta bank
    tay
    sta bank_numbers,y
    rts

sound_update:
    lda bank                ; the bank the game had in, to put back
    pha
    lda #SONG_BANK
    jsr set_bank
    ldx #0                  ; pulse 1
    jsr channel_step
    ldx #2                  ; pulse 2
    jsr channel_step
    pla
    jmp set_bank

; channel_step: X = channel * 2, so that (stream,x) is its pointer.
channel_step:
    dec wait,x
    bne @done               ; the note still sounds
@read:
    lda (stream,x)
    cmp #LOOP
    bne @note
    lda stream_starts,x     ; back to the start
    sta stream,x
    lda stream_starts+1,x
    sta stream+1,x
    jmp @read
@note:
    sta note
    jsr advance
    lda (stream,x)          ; how many frames it lasts
    sta wait,x
    jsr advance
    stx channel
    txa
    asl a
    tay                     ; Y = 0 or 4: the channel's first register
    lda note
    bne @sound
    lda #%00110000          ; a rest: volume 0
    sta PULSE1,y
    rts
@sound:
    lda voices,x            ; duty, length halt, constant volume
    sta PULSE1,y
    lda voices+1,x          ; sweep
    sta PULSE1+1,y
    lda note
    asl a
    tax
    lda periods,x
    sta PULSE1+2,y
    lda periods+1,x         ; writing the high byte restarts the note
    sta PULSE1+3,y
    ldx channel
@done:
    rts

advance:
    inc stream,x
    bne @same
    inc stream+1,x
@same:
    rts

.rodata
bank_numbers:
    .byte 0, 1
voices:                     ; per channel: $4000, $4001
    .byte %10111000, %00001000  ; pulse 1: 50% duty, volume 8, no sweep
    .byte %01110110, %10011010  ; pulse 2: 25% duty, volume 6, sweeping up

.segment "VECTORS"
    .word nmi, reset, irq
